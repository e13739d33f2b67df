from django.apps import AppConfig


class EdgeConfig(AppConfig):
    """The edge cache in front of the site: response headers, and purges connected to content signals.

    The content apps never import it: it listens to their models' signals (and to
    ``publishing.signals.content_changed``) from here, in every process.
    """

    name = "edge"
    verbose_name = "Edge cache"

    def ready(self):
        from . import changes

        changes.connect_signals()
