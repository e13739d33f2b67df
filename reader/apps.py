from django.apps import AppConfig


class ReaderConfig(AppConfig):
    """What readers see across content; connects the page cache's invalidation in every process.

    The content apps never import the cache: it listens to their models' signals
    (and to ``publishing.signals.content_changed`` for bulk writes) from here.
    """

    name = "reader"
    verbose_name = "Reader site"

    def ready(self):
        from . import caching

        caching.connect_signals()
