"""How images enter: the upload form (several files at once) and the size limit on the way in.

The form validates every file with ``processing.inspect`` before anything is written, and
stores none of them if any is refused: the editor sees each refused file with its reason,
fixes the batch and sends it again. Each file needs its own alt text. The admin's upload
page (``images.admin``) uses this form; whatever else ever lets images in must call
``processing.inspect`` and ``renditions.store`` as ``save`` does.
"""
from django import forms
from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.db import transaction

from . import processing, renditions
from .models import Image
from .tasks import queue_renditions_on_commit

#: The codes of the form's refusals (``UploadForm.clean``), which the paste endpoint answers with its own
#: status each: too large, not an image we accept (SVG, another type, damaged, too many pixels), a copy.
TOO_LARGE, REFUSED, DUPLICATE = "too_large", "refused", "duplicate"


class LimitedUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: a file growing past ``IMAGES_MAX_UPLOAD_BYTES`` is skipped as its
    bytes arrive -- never held in memory or written to a temporary file whole -- and its name noted
    on the request (``refused_uploads``), so the form can say why it is missing."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.IMAGES_MAX_UPLOAD_BYTES:
            refused = getattr(self.request, "refused_uploads", [])
            self.request.refused_uploads = [*refused, self.file_name]
            raise SkipFile
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handler (memory or temporary file) holds the file


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleImageField(forms.FileField):
    """Several files in one input (Django's documented pattern); each checked by ``processing.inspect``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": "image/jpeg,image/png,image/gif,image/webp,image/avif"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, (list, tuple)) else [data]
        return [super(MultipleImageField, self).clean(item, initial) for item in files if item]


class UploadForm(forms.Form):
    """Images with their alt texts (one per file, in order), and a caption and credit for all of them."""

    files = MultipleImageField(label="Images", required=False,
                               help_text=f"{processing.FORMAT_NAMES}; at most "
                                         f"{processing.megabytes(settings.IMAGES_MAX_UPLOAD_BYTES)} and "
                                         f"{settings.IMAGES_MAX_PIXELS / 1e6:g} megapixels each. Choose several at once.")
    caption = forms.CharField(max_length=500, required=False, help_text="Optional, for every image of this upload.")
    credit = forms.CharField(max_length=200, required=False, help_text="Optional, for every image of this upload.")

    class Media:
        js = ["images/upload.js"]

    def __init__(self, *args, refused=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.refused = list(refused)  # names LimitedUploadHandler dropped
        self.alts = [alt.strip() for alt in self.data.getlist("alt")] if hasattr(self.data, "getlist") else []

    def clean(self):
        cleaned = super().clean()
        files = cleaned.get("files") or []
        limit = processing.megabytes(settings.IMAGES_MAX_UPLOAD_BYTES)
        problems = [forms.ValidationError(f"“{name}” is larger than {limit}; images may be at most that.", code=TOO_LARGE)
                    for name in self.refused]
        if not files and not problems:
            problems.append(forms.ValidationError("Choose at least one image.", code="required"))
        if len(self.alts) < len(files) or not all(self.alts[: len(files)]):
            problems.append(forms.ValidationError(
                f"Give every image its own alt text: {len(files)} file(s), "
                f"{len([alt for alt in self.alts if alt])} alt text(s).", code="alt_text"))
        inspected = []
        for upload in files:
            try:
                inspected.append(self.inspect(upload))
            except processing.RefusedImage as refusal:
                problems.extend(forms.ValidationError(message, code=refusal.code or REFUSED)
                                for message in refusal.messages)
        if problems:
            raise forms.ValidationError(problems)
        cleaned["inspected"] = inspected
        return cleaned

    @staticmethod
    def inspect(upload) -> tuple[str, processing.Inspected]:
        """The upload checked by size first (before reading it), then by content; never twice the same file."""
        if upload.size > settings.IMAGES_MAX_UPLOAD_BYTES:
            raise processing.RefusedImage(f"“{upload.name}” is {processing.megabytes(upload.size)}; images may be "
                                          f"at most {processing.megabytes(settings.IMAGES_MAX_UPLOAD_BYTES)}.",
                                          code=TOO_LARGE)
        upload.seek(0)
        checked = processing.inspect(upload.read(), upload.name)
        existing = Image.objects.filter(content_hash=checked.content_hash).first()
        if existing is not None:
            raise processing.RefusedImage(f"“{upload.name}” was uploaded before: image {existing} "
                                          f"({existing.markdown}).", code=DUPLICATE)
        return upload.name, checked

    def save(self, user) -> list[Image]:
        """Store every image of a valid form (one transaction); their renditions are queued after the commit."""
        images = []
        try:
            with transaction.atomic():
                for (name, checked), alt in zip(self.cleaned_data["inspected"], self.alts):
                    images.append(renditions.new_image(checked, name=name, alt=alt, user=user,
                                                       caption=self.cleaned_data["caption"],
                                                       credit=self.cleaned_data["credit"]))
                    renditions.store(images[-1], checked)
                    queue_renditions_on_commit(images[-1].pk)
        except Exception:
            for image in images:  # rolled back: their rows are gone, so are their files
                renditions.discard(image)
            raise
        return images
