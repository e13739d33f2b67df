"""Images in the admin: upload several at once, search, copy an image's Markdown, pick one in a body.

Adding images is the upload page (``UploadForm``: many files, each with its alt text).
An image's page shows it, the Markdown that places it in a post or digest, which pages
show it, and a staff-only link to the original as uploaded. Deleting an image that a
published page shows is refused by the model (``ImageUse``'s ``on_delete``), which the
admin's delete pages turn into a list of those pages. ``ImagePickerMixin`` puts an
"Insert image…" link under the Markdown fields of the post and digest forms: it opens
this list in a popup and inserts the chosen image's Markdown at the cursor.

Writing in those fields (docs/writing.md): each Markdown field has the page's own rendering
beside it (``MarkdownWriting``, served by the content admin's ``preview_view`` through
``publishing.previews``), and an image file dropped or pasted into a body is uploaded by
``paste_view`` with the upload page's own form and checks, answered as JSON.
"""
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminTextareaWidget
from django.http import FileResponse, Http404, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from publishing import previews
from publishing.edit_conflicts import EditConflictAdmin

from . import renditions
from .models import Image
from .uploads import DUPLICATE, REFUSED, TOO_LARGE, UploadForm

#: The status of each of the upload form's refusals when a file is dropped or pasted into a Markdown field.
PASTE_REFUSALS = {TOO_LARGE: 413, REFUSED: 422, DUPLICATE: 409}


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
            path("paste/", self.admin_site.admin_view(self.paste_view), name="images_image_paste"),
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

    def paste_view(self, request):
        """An image file dropped or pasted into a Markdown field (``images/writing.js``), with its alt text:
        the upload page's form and checks, answered as JSON -- its Markdown, or the refusal with its status."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_add_permission(request):
            return _refusal(403, "You may not upload images.")
        form = UploadForm(request.POST, request.FILES, refused=getattr(request, "refused_uploads", ()))
        if not form.is_valid():
            errors = [error for errors in form.errors.as_data().values() for error in errors]
            codes = {error.code for error in errors}
            status = next((PASTE_REFUSALS[code] for code in PASTE_REFUSALS if code in codes), 400)
            return _refusal(status, " ".join(message for error in errors for message in error.messages))
        images = form.save(request.user)
        for image in images:
            self.log_addition(request, image, [{"added": {}}])
        return _private(JsonResponse({"ids": [image.pk for image in images],
                                      "markdown": "\n\n".join(image.markdown for image in images)}, status=201))

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


class MarkdownWriting(AdminTextareaWidget):
    """A Markdown textarea with its preview beside it, refreshed as the editor types (``images/writing.js``
    posts the form to `preview_url`), and Ctrl/Cmd+S for "Save and continue editing". With an
    `upload_url`, an image file dropped or pasted into it is uploaded there and its Markdown inserted."""

    class Media:
        js = ["images/writing.js"]
        css = {"all": ["images/writing.css"]}

    def __init__(self, attrs=None, *, preview_url: str = "", upload_url: str = ""):
        data = {"data-preview-url": preview_url, **({"data-upload-url": upload_url} if upload_url else {})}
        super().__init__({**data, **(attrs or {})})

    def render(self, name, value, attrs=None, renderer=None):
        if not self.attrs.get("data-preview-url"):
            return super().render(name, value, attrs, renderer)
        return format_html(
            '<div class="markdown-field"><div class="markdown-writing">{}<div class="markdown-preview-pane">'
            '<p class="markdown-preview-label">Preview</p><div class="markdown-preview" aria-live="polite"></div>'
            '</div></div><p class="markdown-writing-status" role="status"></p>{}</div>',
            super().render(name, value, attrs, renderer), self.below(name, attrs))

    def below(self, name: str, attrs) -> str:
        """What follows the text and its preview (nothing here; the image picker below)."""
        return ""


class MarkdownWithImages(MarkdownWriting):
    """A Markdown field that shows images: the preview, and an "Insert image…" link: Django's lookup popup
    over the images list, whose choice ``images/picker.js`` turns into the image's Markdown at the cursor."""

    class Media:
        js = ["admin/js/vendor/jquery/jquery.js", "admin/js/jquery.init.js", "admin/js/admin/RelatedObjectLookups.js",
              "images/picker.js"]

    def render(self, name, value, attrs=None, renderer=None):
        if self.attrs.get("data-preview-url"):
            return super().render(name, value, attrs, renderer)
        return format_html("{}{}", super().render(name, value, attrs, renderer), self.below(name, attrs))

    def below(self, name: str, attrs) -> str:
        target = (attrs or {}).get("id") or f"id_{name}"
        drop = " Drop or paste an image file into the text to upload it." if "data-upload-url" in self.attrs else ""
        return format_html(
            '<p class="image-picker"><a href="{}?_to_field=id" class="related-lookup" id="lookup_{}_image">'
            "Insert image…</a> <span class=\"help\">Markdown: <code>![alt text](image:ID)</code>.{}</span>"
            '<input type="hidden" id="{}_image" class="image-picker-value" data-target="{}" data-markdown-url="{}"></p>',
            reverse("admin:images_image_changelist"), target, drop, target, target,
            reverse("admin:images_image_markdown", args=[0]))


class MarkdownPreviewsMixin:
    """For a ModelAdmin or an inline: each Markdown field gets its preview, as the page renders it.

    ``markdown_previews`` maps a field to how the page renders it (``publishing.previews.Markdown``); the
    fields in ``image_picker_fields`` are Markdown with images unless it says otherwise, and get the image
    picker too. A field that shows images takes image files dropped or pasted into it, from staff who may
    upload images. The previews are served by the item's ModelAdmin (``ImagePickerMixin``).
    """

    image_picker_fields: tuple[str, ...] = ()
    markdown_previews: dict[str, previews.Markdown] = {}

    def previewed_fields(self) -> dict[str, previews.Markdown]:
        return {**{name: previews.BODY for name in self.image_picker_fields}, **self.markdown_previews}

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        markdown = self.previewed_fields().get(db_field.name)
        if markdown is not None:
            kwargs["widget"] = self.markdown_widget(request, db_field.name, markdown)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def markdown_widget(self, request, name: str, markdown: previews.Markdown) -> MarkdownWriting:
        """The field's widget, pointing at the item's preview (the change page's, or the add page's)."""
        opts = getattr(self, "parent_model", self.model)._meta  # an inline previews through its item's admin
        object_id = str((request.resolver_match.kwargs if request.resolver_match else {}).get("object_id", ""))
        preview_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_preview",
                              args=[object_id] if object_id.isdigit() else [])
        if name not in self.image_picker_fields and not markdown.images:
            return MarkdownWriting(preview_url=preview_url)
        may_upload = markdown.images and request.user.has_perm("images.add_image")
        return MarkdownWithImages(preview_url=preview_url,
                                  upload_url=reverse("admin:images_image_paste") if may_upload else "")


class ImagePickerMixin(MarkdownPreviewsMixin):
    """For a ModelAdmin: its Markdown fields' widgets (``MarkdownPreviewsMixin``) and the endpoint that
    previews them and its inlines' (``preview_view``), for staff who may change the item (or add one)."""

    def get_urls(self):
        opts = self.model._meta
        name, view = f"{opts.app_label}_{opts.model_name}_preview", self.admin_site.admin_view(self.preview_view)
        return [path("preview/", view, name=name), path("<int:object_id>/preview/", view, name=name),
                *super().get_urls()]

    def preview_view(self, request, object_id: int | None = None):
        """The posted field as the page would show it: ``{"html": ...}``; a precise 4xx with ``{"error": ...}``."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = None
        if object_id is not None:
            obj = self.get_queryset(request).filter(pk=object_id).first()
            if obj is None:
                return _refusal(404, "This item no longer exists.")
        if not (self.has_change_permission(request, obj) if obj else self.has_add_permission(request)):
            return _refusal(403, "You may not change this item, so it has no preview for you.")
        field = request.POST.get("field", "")  # a form past DATA_UPLOAD_MAX_MEMORY_SIZE: Django's own 400
        markdown = self.previewed_field(request, obj, field)
        if markdown is None:
            return _refusal(400, f"“{field}” is not a Markdown field of this form.")
        references = markdown.references and (lambda: markdown.references(request, obj))
        try:
            html = previews.preview(markdown, request.POST.get(field, ""), references)
        except previews.TooLong as error:
            return _refusal(413, str(error))
        return _private(JsonResponse({"html": html}))

    def previewed_field(self, request, obj, field: str) -> previews.Markdown | None:
        """How `field` (a form field's name: ``body``, or an inline row's, ``faq_entries-0-answer``) renders."""
        if field in self.previewed_fields():
            return self.previewed_fields()[field]
        prefix, _, name = field.rpartition("-")
        prefix, _, row = prefix.rpartition("-")
        if not row.isdigit():
            return None
        for inline in self.get_inline_instances(request, obj):
            if not isinstance(inline, MarkdownPreviewsMixin):
                continue
            if inline.get_formset(request, obj).get_default_prefix() == prefix:
                return inline.previewed_fields().get(name)
        return None


def _refusal(status: int, message: str) -> JsonResponse:
    return _private(JsonResponse({"error": message}, status=status))


def _private(response):
    response["Cache-Control"] = "private, no-store"
    return response
