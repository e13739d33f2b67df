from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The seed documents' importers and the ``import_seeds`` command (they span digests and blog)."""

    name = "demo"
    verbose_name = "Demo content"
