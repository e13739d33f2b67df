from django.apps import AppConfig


class FediverseConfig(AppConfig):
    name = "fediverse"
    verbose_name = "Fediverse"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import checks  # noqa: F401  (registers the handle clash check)

    @staticmethod
    def check_handle(handle: str, *, instance=None) -> None:
        """For the topic and author admin forms, which reach it through the app registry: the content
        apps sit beneath this one and never import it (import-linter layers)."""
        from .handles import check_handle

        check_handle(handle, instance=instance)
