from django.apps import AppConfig


class IngestionConfig(AppConfig):
    """GitHub webhooks and polling, feeds, and drafted digests."""

    name = "ingestion"
    verbose_name = "Ingestion"

    def ready(self):
        from publishing.signals import change_page_opened

        from .drafting import note_opened

        change_page_opened.connect(note_opened, dispatch_uid="ingestion.drafting.note_opened")
