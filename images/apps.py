from django.apps import AppConfig


class ImagesConfig(AppConfig):
    """Uploaded images. At start it lends the Markdown renderer (``publishing.rendering``) its
    ``image:ID`` handler: publishing sits beneath this app and cannot import it."""

    name = "images"

    def ready(self):
        from publishing import rendering

        from . import signals
        from .rendering import images_html

        rendering.register_image_renderer(images_html)
        signals.connect()
