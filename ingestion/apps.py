from django.apps import AppConfig


class IngestionConfig(AppConfig):
    """GitHub webhooks and polling, feeds, and drafted digests."""

    name = "ingestion"
    verbose_name = "Ingestion"
