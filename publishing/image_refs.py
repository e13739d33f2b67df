"""``![alt](image:ID)`` in Markdown: a stored image, drawn by the app that stores images.

Publishing sits beneath the content apps and the images app, so it cannot read images
itself: the images app registers a renderer at start (``register_image_renderer``), and
``rendering.render_markdown(..., images=True)`` hands it the images a text cites.

Why a placeholder. Image references are turned into a random marker while markdown-it
renders, the page's HTML goes through the ordinary allow-list (which has no ``<picture>``,
``<source>`` or ``srcset``), and only then is each marker replaced by the renderer's HTML,
itself cleaned by a second allow-list holding exactly what that renderer emits. So text
from anyone -- raw HTML in a body, a feed entry, a PR description -- can never carry a
``<picture>`` or a ``srcset`` of its own, and cannot forge a marker (it is random per render).
An unknown id, or no renderer at all, prints the alt text and nothing else.
"""
import html
import re
from collections.abc import Callable
from dataclasses import dataclass

import nh3

#: The Markdown image source that names a stored image.
IMAGE_SRC = re.compile(r"image:(\d{1,12})")

#: What the images app's renderer emits, and all that the second allow-list keeps.
PICTURE_TAGS = {"figure", "figcaption", "picture", "source", "img", "span"}
PICTURE_ATTRIBUTES = {
    "figure": {"class"},
    "span": {"class"},
    "source": {"type", "srcset", "sizes"},
    "img": {"src", "srcset", "sizes", "alt", "width", "height", "loading", "decoding"},
}


@dataclass(frozen=True)
class ImageRef:
    """One image a text shows, as the renderer needs to know it."""

    id: int
    alt: str  # the Markdown's alt text; empty: the image's own
    eager: bool  # likely above the fold: no lazy loading
    alone: bool  # the only thing in its paragraph: may become a <figure> with caption and credit


_renderer: Callable[[list[ImageRef]], list[str]] | None = None


def register_image_renderer(renderer: Callable[[list[ImageRef]], list[str]]) -> None:
    """Called once by the images app (``ImagesConfig.ready``): refs in text order -> one HTML string each."""
    global _renderer
    _renderer = renderer


def render_image_token(self, tokens, idx, options, env) -> str:
    """markdown-it's image rule: a stored image becomes a marker when the caller asked for images."""
    token = tokens[idx]
    match = IMAGE_SRC.fullmatch(token.attrGet("src") or "")
    if match is None or "images" not in env:
        return self.image(tokens, idx, options, env)
    env["images"].append((int(match.group(1)), self.renderInlineAsText(token.children or [], options, env)))
    return f"{env['marker']}{len(env['images']) - 1}x"


def place_images(rendered: str, env: dict, eager: int) -> str:
    """Replace each marker in sanitised `rendered` HTML by its image's HTML (a paragraph holding only an
    image becomes the image itself: a <figure> cannot sit inside a <p>)."""
    found = env.get("images") or []
    markers = [f"{env.get('marker')}{index}x" for index in range(len(found))]
    refs = [ImageRef(image_id, alt, index < eager, f"<p>{markers[index]}</p>" in rendered)
            for index, (image_id, alt) in enumerate(found)]
    pieces = _renderer(refs) if _renderer is not None and refs else [html.escape(ref.alt) for ref in refs]
    for ref, marker, piece in zip(refs, markers, pieces):
        piece = sanitize_picture(piece)
        if ref.alone and piece.startswith("<figure"):
            rendered = rendered.replace(f"<p>{marker}</p>", piece)
        rendered = rendered.replace(marker, piece)
    return rendered


def render_image(image_id: int, *, eager: bool = True) -> str:
    """One stored image on its own (a post's lead image), as a body would show it alone in a paragraph."""
    if _renderer is None:
        return ""
    return sanitize_picture(_renderer([ImageRef(image_id, "", eager, True)])[0])


def sanitize_picture(fragment: str) -> str:
    """The renderer's HTML through an allow-list of exactly what it emits (defence in depth)."""
    return nh3.clean(fragment, tags=PICTURE_TAGS, attributes=PICTURE_ATTRIBUTES, url_schemes={"http", "https"},
                     link_rel=None, attribute_filter=_srcset_filter)


def _srcset_filter(element: str, attribute: str, value: str) -> str | None:
    """nh3 checks ``src`` against the URL schemes but not ``srcset``: drop a srcset naming anything but an
    http(s) or site-relative URL."""
    if attribute != "srcset":
        return value
    urls = [candidate.strip().split(" ")[0] for candidate in value.split(",")]
    return value if all(re.match(r"(https?://|/(?!/))", url) for url in urls) else None
