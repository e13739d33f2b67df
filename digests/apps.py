from django.apps import AppConfig


class DigestsConfig(AppConfig):
    name = "digests"

    def ready(self):
        from . import signals

        signals.connect()
