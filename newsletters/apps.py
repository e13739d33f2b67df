from django.apps import AppConfig


class NewslettersConfig(AppConfig):
    """Readers following by email (issue 27, docs/newsletters.md).

    The content apps never import this app: it hears of publishing from their signals (connected
    here) and from its beat sweep, which is what guarantees every published item is mailed once.
    """

    name = "newsletters"
    verbose_name = "Newsletters"

    def ready(self):
        from . import signals

        signals.connect_signals()
