"""Social card images (``og:image``): a 1200×630 PNG per post and digest, drawn when what it shows changes.

Link previews on social sites and chat apps show a large image when a page names one. Each
card shows the site name, a kicker (the section, or "Blog"), the title, the byline and the
date, drawn by Pillow with the DejaVu Sans fonts bundled in ``static/fonts`` (with their licence),
so the image is the same on every machine. Content apps store a card beside their rows
(a ``StoredCard`` subclass) and the card's fingerprint in the row itself, so a page names the
image without another query: the fingerprint is a hash of what the card shows, it is part of
the image's URL, and that URL is therefore served as immutable for a year; a changed title
means a new fingerprint and a new URL. Cards are drawn on save (about 30 ms), only when the
fingerprint changes, never on a reader's request. Rows written without a save (``bulk_create``:
imports, the bench generator) have none: beat's ``sweep_social_cards`` tasks (``draw_missing``)
draw them within a minute or so, newest first, without waiting for the row's next save. A post
with a lead image shows it in the card's right-hand part (cropped to fill it); what it shows
includes the image's content hash, so a new image is a new card.
"""
import functools
import hashlib
import io
import json
import logging
import textwrap
import time

from django.conf import settings
from django.db import models, transaction
from django.http import Http404, HttpResponse, HttpResponseRedirect
from PIL import Image, ImageDraw, ImageFont, ImageOps

from .signals import announce_bulk_write

WIDTH, HEIGHT = 1200, 630
SITE_NAME = "RepoJournal"
#: Part of every fingerprint: change it to redraw every card after changing the design.
DESIGN = "1"
FONTS = settings.BASE_DIR / "static" / "fonts"
MARGIN = 80
BACKGROUND, INK, ACCENT, MUTED = "#fbfaf7", "#1b1b1b", "#b3261e", "#5f5f5f"
TITLE_LINES = 4
#: Width of the photo panel on the right of a card with a lead image.
PHOTO_WIDTH = 440
#: ``Cache-Control`` of a card at its fingerprinted URL: the URL changes whenever the image does.
IMMUTABLE = "public, max-age=31536000, immutable"
#: Rows ``draw_missing`` locks and draws per transaction (about 30 ms each: editors saving one of them
#: wait that long at most), and how long one sweep draws before it leaves the rest to the next.
SWEEP_BATCH = 20
SWEEP_SECONDS = 40.0

logger = logging.getLogger(__name__)


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


def _title_lines(title: str, width: int) -> tuple[list[str], ImageFont.FreeTypeFont]:
    """The title wrapped to `width` pixels, in the largest size that fits TITLE_LINES lines."""
    for size in (72, 64, 56, 48):
        face = font(True, size)
        chars = max(10, int(width / (size * 0.6)))
        lines = textwrap.wrap(title, chars) or [""]
        if len(lines) <= TITLE_LINES:
            return lines, face
    lines = textwrap.wrap(title, chars, max_lines=TITLE_LINES, placeholder=" …")
    return lines, face


def draw(*, title: str, kicker: str, byline: str, day: str, image: str = "", photo: Image.Image | None = None) -> bytes:
    """The card as PNG bytes; `photo` (the lead image, whose hash `image` is) fills the right-hand part."""
    card = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    text_width = WIDTH - 2 * MARGIN
    if photo is not None:
        card.paste(ImageOps.fit(photo.convert("RGB"), (PHOTO_WIDTH, HEIGHT)), (WIDTH - PHOTO_WIDTH, 0))
        text_width -= PHOTO_WIDTH
    pen = ImageDraw.Draw(card)
    pen.rectangle((0, 0, WIDTH, 12), fill=ACCENT)
    pen.text((MARGIN, 70), kicker.upper(), font=font(True, 30), fill=ACCENT)
    lines, face = _title_lines(title, text_width)
    y = 140
    for line in lines:
        pen.text((MARGIN, y), line, font=face, fill=INK)
        y += int(face.size * 1.2)
    footer = " · ".join(part for part in (byline, day) if part)
    footer_chars = int(70 * text_width / (WIDTH - 2 * MARGIN))
    pen.text((MARGIN, HEIGHT - 130), textwrap.shorten(footer, footer_chars, placeholder=" …"), font=font(False, 30),
             fill=MUTED)
    pen.text((MARGIN, HEIGHT - 80), SITE_NAME, font=font(True, 34), fill=INK)
    out = io.BytesIO()
    card.save(out, format="PNG")
    return out.getvalue()


def store(card_model, owner, shown: dict[str, str], photo=None) -> str:
    """Draw and store `owner`'s card if what it shows changed; returns the fingerprint (the row's copy
    is the caller's to write). `card_model` is the app's ``StoredCard`` subclass, keyed by `owner`;
    `photo`, if given, returns the Pillow image to show (called only when the card is drawn)."""
    key = fingerprint(**shown)
    stored = card_model.objects.filter(pk=owner.pk).values_list("fingerprint", flat=True).first()
    if stored != key:
        png = draw(**shown, photo=photo() if photo else None)
        card_model.objects.update_or_create(pk=owner.pk, defaults={"png": png, "fingerprint": key})
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


def missing(queryset, card_model):
    """The rows of `queryset` whose ``social_card`` names no stored card: written without a save
    (``bulk_create``, imports, the bench generator), or never drawn because their write was lost."""
    stored = card_model.objects.filter(pk=models.OuterRef("pk"), fingerprint=models.OuterRef("social_card"))
    return queryset.filter(~models.Exists(stored))


def draw_missing(queryset, card_model, seconds: float = SWEEP_SECONDS) -> int:
    """Draw the cards ``missing`` from `queryset`, newest rows first, for about `seconds`; returns how many.

    Each batch is locked ``SKIP LOCKED`` in a transaction of its own, so two sweeps at once (beat's
    next while the last still draws) share the work instead of repeating it, and a sweep that dies
    loses at most one batch, which the next sweep finds missing again. A row whose card cannot be
    drawn is logged and passed over for the rest of this sweep. The pages of the rows drawn now
    name their card: caches hear of them once, at the end (``announce_bulk_write``).
    """
    deadline, drawn, below = time.monotonic() + seconds, [], None
    while time.monotonic() < deadline:
        with transaction.atomic():
            rows = missing(queryset, card_model).order_by("-pk")
            if below is not None:
                rows = rows.filter(pk__lt=below)
            batch = list(rows.select_for_update(skip_locked=True)[:SWEEP_BATCH])
            drawn += [owner.pk for owner in batch if _drawn(owner)]
        if len(batch) < SWEEP_BATCH:
            break
        below = batch[-1].pk
    if drawn:
        announce_bulk_write(queryset.model, drawn)
    return len(drawn)


def draw_each(owners) -> list[int]:
    """Draw the cards of `owners` whose fingerprint changed (a rename's worker); returns the ids of those
    now true, passing over (and logging) a row whose card cannot be drawn, as ``draw_missing`` does."""
    return [owner.pk for owner in owners if _drawn(owner)]


def _drawn(owner) -> bool:
    try:
        with transaction.atomic():
            owner.draw_social_card()
    except Exception:  # noqa: BLE001 -- one broken row must not stop the sweep; logged for an operator
        logger.exception("Could not draw the social card of %s %s", owner._meta.label, owner.pk)
        return False
    return True
