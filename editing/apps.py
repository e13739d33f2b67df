from django.apps import AppConfig


class EditingConfig(AppConfig):
    """Editors never lose work (issue 37): who else has an item open (presence) and what an editor
    typed and has not saved (autosave), on every change form with edit conflicts."""

    name = "editing"
    verbose_name = "Editing"
    default_auto_field = "django.db.models.BigAutoField"
