from django.apps import AppConfig


class EditbarConfig(AppConfig):
    """The edit bar signed-in staff see on public pages (issue 26): ``{% edit_bar %}`` in base.html."""

    name = "editbar"
    verbose_name = "Edit bar"
