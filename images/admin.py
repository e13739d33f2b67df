"""Images in the admin: upload several at once, search, copy an image's Markdown, pick one in a body.

Adding images is the upload page (``UploadForm``: many files, each with its alt text).
An image's page shows it, the Markdown that places it in a post or digest, which pages
show it, and a staff-only link to the original as uploaded. Deleting an image that a
published page shows is refused by the model (``ImageUse``'s ``on_delete``), which the
admin's delete pages turn into a list of those pages. ``ImagePickerMixin`` puts an
"Insert image…" link under the Markdown fields of the post and digest forms: it opens
this list in a popup and inserts the chosen image's Markdown at the cursor.
"""
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminTextareaWidget
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from publishing.edit_conflicts import EditConflictAdmin

from . import renditions
from .models import Image
from .uploads import UploadForm


@admin.register(Image)
class ImageAdmin(EditConflictAdmin, admin.ModelAdmin):
    list_display = ["thumbnail", "alt", "dimensions", "uploaded_by", "uploaded_at", "state"]
    list_display_links = ["thumbnail", "alt"]
    list_select_related = ["uploaded_by"]
    search_fields = ["alt", "caption", "credit", "original_name", "=content_hash"]
    date_hierarchy = "uploaded_at"
    fields = ["preview", "markdown_to_copy", "alt", "caption", "credit", "details", "shown_by"]
    readonly_fields = ["preview", "markdown_to_copy", "details", "shown_by"]

    class Media:
        js = ["images/admin.js"]

    def get_urls(self):
        own = [
            path("upload/", self.admin_site.admin_view(self.upload_view), name="images_image_upload"),
            path("<int:pk>/original/", self.admin_site.admin_view(self.original_view), name="images_image_original"),
            path("<int:pk>/markdown/", self.admin_site.admin_view(self.markdown_view), name="images_image_markdown"),
        ]
        return own + super().get_urls()

    def add_view(self, request, form_url="", extra_context=None):
        """Adding is uploading: the upload page takes several files at once."""
        return HttpResponseRedirect(reverse("admin:images_image_upload"))

    def upload_view(self, request):
        if not self.has_add_permission(request):
            raise Http404
        form = UploadForm(request.POST or None, request.FILES or None, refused=getattr(request, "refused_uploads", ()))
        if request.method == "POST" and form.is_valid():
            images = form.save(request.user)
            for image in images:
                self.log_addition(request, image, [{"added": {}}])
            self.message_user(request, f"Uploaded {len(images)} image{'s' if len(images) != 1 else ''}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:images_image_changelist"))
        context = {**self.admin_site.each_context(request), "title": "Upload images", "form": form,
                   "opts": self.model._meta, "media": self.media + form.media, "alts": form.alts or [""]}
        return TemplateResponse(request, "admin/images/image/upload.html", context)

    def original_view(self, request, pk: int):
        """The file as uploaded, to staff who may view images: a download, never shown inline (it was
        hostile until proven otherwise, and only its re-encoded renditions are)."""
        image = get_object_or_404(Image, pk=pk)
        if not self.has_view_permission(request, image):
            raise Http404
        response = FileResponse(renditions.private_storage().open(image.original, "rb"), as_attachment=True,
                                filename=image.original_name or image.original)
        response["Content-Type"] = "application/octet-stream"
        response["Cache-Control"] = "private, no-store"
        return response

    def markdown_view(self, request, pk: int):
        """The image's Markdown as plain text: what the picker inserts into a body."""
        image = get_object_or_404(Image, pk=pk)
        if not self.has_view_permission(request, image):
            raise Http404
        return HttpResponse(image.markdown, content_type="text/plain; charset=utf-8")

    @admin.display(description="image")
    def thumbnail(self, image: Image) -> str:
        width = min(96, image.width)
        return format_html('<img src="{}" alt="" width="{}" height="{}" loading="lazy">',
                           renditions.url(image.fallback_name), width, max(1, round(image.height * width / image.width)))

    @admin.display(description="size")
    def dimensions(self, image: Image) -> str:
        return f"{image.width} × {image.height}"

    @admin.display(description="renditions", boolean=True)
    def state(self, image: Image) -> bool:
        return image.ready

    @admin.display(description="image")
    def preview(self, image: Image) -> str:
        width = min(480, image.width)
        return format_html('<img src="{}" alt="{}" width="{}" height="{}">', renditions.url(image.fallback_name),
                           image.alt, width, max(1, round(image.height * width / image.width)))

    @admin.display(description="Markdown")
    def markdown_to_copy(self, image: Image) -> str:
        return format_html(
            '<input type="text" readonly class="vTextField image-markdown" value="{}" size="50" aria-label="Markdown"> '
            '<button type="button" class="button image-copy">Copy</button>'
            '<div class="help">Paste it into a post or digest body; an empty alt text (<code>![](image:{})</code>) '
            "uses this image's own.</div>", image.markdown, image.pk)

    @admin.display(description="file")
    def details(self, image: Image) -> str:
        state = "ready" if image.ready else "being made (the JPEG/PNG is shown meanwhile)"
        return format_html(
            "{} × {} {} · SHA-256 {} · uploaded {} by {} · renditions {} · <a href=\"{}\">download the original</a> ({})",
            image.width, image.height, image.format, image.content_hash[:16], image.uploaded_at,
            image.uploaded_by or "someone since removed", state,
            reverse("admin:images_image_original", args=[image.pk]), image.original_name)

    @admin.display(description="shown by")
    def shown_by(self, image: Image) -> str:
        uses = list(image.uses.select_related("content_type"))
        if not uses:
            return "No page shows this image."
        return format_html("<ul>{}</ul>", format_html_join(
            "", '<li><a href="{}">{}</a> ({}{})</li>',
            ((use.path, use.title, use.content_type.name, "" if use.published else ", not published") for use in uses)))


class MarkdownWithImages(AdminTextareaWidget):
    """A Markdown textarea with an "Insert image…" link: Django's lookup popup over the images list,
    whose choice ``images/picker.js`` turns into the image's Markdown at the cursor."""

    class Media:
        js = ["admin/js/vendor/jquery/jquery.js", "admin/js/jquery.init.js", "admin/js/admin/RelatedObjectLookups.js",
              "images/picker.js"]

    def render(self, name, value, attrs=None, renderer=None):
        textarea = super().render(name, value, attrs, renderer)
        target = (attrs or {}).get("id") or f"id_{name}"
        return format_html(
            '{}<p class="image-picker"><a href="{}?_to_field=id" class="related-lookup" id="lookup_{}_image">'
            "Insert image…</a> <span class=\"help\">Markdown: <code>![alt text](image:ID)</code>.</span>"
            '<input type="hidden" id="{}_image" class="image-picker-value" data-target="{}" data-markdown-url="{}"></p>',
            textarea, reverse("admin:images_image_changelist"), target, target, target,
            reverse("admin:images_image_markdown", args=[0]))


class ImagePickerMixin:
    """For a ModelAdmin: the Markdown fields named in ``image_picker_fields`` get the image picker."""

    image_picker_fields: tuple[str, ...] = ()

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name in self.image_picker_fields:
            kwargs["widget"] = MarkdownWithImages
        return super().formfield_for_dbfield(db_field, request, **kwargs)
