"""Social card images (``og:image``): a 1200×630 PNG per post and digest, drawn when what it shows changes.

Link previews on social sites and chat apps show a large image when a page names one. Each
card shows the site name, a kicker (the section, or "Blog"), the title, the byline and the
date, drawn by Pillow with the DejaVu Sans fonts bundled in ``static/fonts`` (with their licence),
so the image is the same on every machine. Content apps store a card beside their rows
(a ``StoredCard`` subclass) and the card's fingerprint in the row itself, so a page names the
image without another query: the fingerprint is a hash of what the card shows, it is part of
the image's URL, and that URL is therefore served as immutable for a year; a changed title
means a new fingerprint and a new URL. Cards are drawn on save (about 30 ms), only when the
fingerprint changes, never on a reader's request.
"""
import functools
import hashlib
import io
import json
import textwrap

from django.conf import settings
from django.db import models
from django.http import Http404, HttpResponse, HttpResponseRedirect
from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 1200, 630
SITE_NAME = "RepoJournal"
#: Part of every fingerprint: change it to redraw every card after changing the design.
DESIGN = "1"
FONTS = settings.BASE_DIR / "static" / "fonts"
MARGIN = 80
BACKGROUND, INK, ACCENT, MUTED = "#fbfaf7", "#1b1b1b", "#b3261e", "#5f5f5f"
TITLE_LINES = 4
#: ``Cache-Control`` of a card at its fingerprinted URL: the URL changes whenever the image does.
IMMUTABLE = "public, max-age=31536000, immutable"


class StoredCard(models.Model):
    """A drawn card; each content app keeps one per row (``PostCard``, ``DigestCard``)."""

    png = models.BinaryField()
    fingerprint = models.CharField(max_length=16)

    class Meta:
        abstract = True


def fingerprint(**shown: str) -> str:
    """A short hash of what a card shows (and of the design): equal fingerprints, equal images."""
    payload = json.dumps([DESIGN, WIDTH, HEIGHT, sorted(shown.items())], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@functools.cache
def font(bold: bool, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONTS / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")), size)


def _title_lines(title: str) -> tuple[list[str], ImageFont.FreeTypeFont]:
    """The title wrapped to the card's width, in the largest size that fits TITLE_LINES lines."""
    for size in (72, 64, 56, 48):
        face = font(True, size)
        chars = max(10, int((WIDTH - 2 * MARGIN) / (size * 0.6)))
        lines = textwrap.wrap(title, chars) or [""]
        if len(lines) <= TITLE_LINES:
            return lines, face
    lines = textwrap.wrap(title, chars, max_lines=TITLE_LINES, placeholder=" …")
    return lines, face


def draw(*, title: str, kicker: str, byline: str, day: str) -> bytes:
    """The card as PNG bytes."""
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    pen = ImageDraw.Draw(image)
    pen.rectangle((0, 0, WIDTH, 12), fill=ACCENT)
    pen.text((MARGIN, 70), kicker.upper(), font=font(True, 30), fill=ACCENT)
    lines, face = _title_lines(title)
    y = 140
    for line in lines:
        pen.text((MARGIN, y), line, font=face, fill=INK)
        y += int(face.size * 1.2)
    footer = " · ".join(part for part in (byline, day) if part)
    pen.text((MARGIN, HEIGHT - 130), textwrap.shorten(footer, 70, placeholder=" …"), font=font(False, 30), fill=MUTED)
    pen.text((MARGIN, HEIGHT - 80), SITE_NAME, font=font(True, 34), fill=INK)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def store(card_model, owner, shown: dict[str, str]) -> str:
    """Draw and store `owner`'s card if what it shows changed; returns the fingerprint (the row's copy
    is the caller's to write). `card_model` is the app's ``StoredCard`` subclass, keyed by `owner`."""
    key = fingerprint(**shown)
    stored = card_model.objects.filter(pk=owner.pk).values_list("fingerprint", flat=True).first()
    if stored != key:
        card_model.objects.update_or_create(pk=owner.pk, defaults={"png": draw(**shown), "fingerprint": key})
    return key


def serve(card_model, owner, key: str, current_url: str):
    """The card at its fingerprinted URL (immutable); an old fingerprint redirects to the current one."""
    if key != owner.social_card:
        return HttpResponseRedirect(current_url)
    png = card_model.objects.filter(pk=owner.pk, fingerprint=key).values_list("png", flat=True).first()
    if png is None:
        raise Http404("This card is not drawn yet.")
    response = HttpResponse(bytes(png), content_type="image/png")
    response["Cache-Control"] = IMMUTABLE
    response["ETag"] = f'"{key}"'
    return response
