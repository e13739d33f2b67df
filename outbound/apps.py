from django.apps import AppConfig


class OutboundConfig(AppConfig):
    """Outbound webhooks; connects its receivers to the content models' signals in every process.

    The content apps never import this app: it listens to their ``pre_save``/``post_save``/
    ``pre_delete``/``post_delete`` signals from here.
    """

    name = "outbound"
    verbose_name = "Outbound webhooks"

    def ready(self):
        from . import events

        events.connect_signals()
