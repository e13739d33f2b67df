"""Posts and digests as ActivityStreams ``Article`` objects, and the ``Create`` that wraps each in an outbox.

The content is the page's own stored HTML (rendered and sanitised on save by the models), passed once
more through the project's nh3 allow-list with its links made absolute: a remote server has no base URL.
"""
from urllib.parse import urljoin

import nh3
from django.urls import reverse

from blog.models import Post
from digests.models import Digest
from images import renditions
from publishing.rendering import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, ALLOWED_URL_SCHEMES

from . import actors

URL_ATTRIBUTES = {"href", "src"}


def absolute_html(fragment: str, base: str) -> str:
    """`fragment` through the site's allow-list, every link and image source absolute (resolved on `base`)."""
    def absolute(tag, attribute, value):
        return urljoin(base, value) if attribute in URL_ATTRIBUTES else value

    return nh3.clean(fragment, tags=ALLOWED_TAGS | {"figure", "figcaption"}, attributes=ALLOWED_ATTRIBUTES,
                     url_schemes=ALLOWED_URL_SCHEMES, link_rel="nofollow noopener noreferrer",
                     attribute_filter=absolute)


def audience(request, authors: list) -> dict:
    """Public, and copied to the followers of every actor it belongs to."""
    return {"to": [actors.PUBLIC], "cc": [actor.id(request) + "/followers" for actor in authors]}


def post_article(request, post: Post) -> dict:
    """A published post. Expects ``with_reader_data()`` and ``lead_image`` loaded for listings (no N+1)."""
    url = request.build_absolute_uri(post.get_absolute_url())
    owners = [actor for actor in map(actors.of_author, post.ordered_authors()) if actor] + [actors.blog()]
    article = {
        "id": url, "type": "Article", "name": post.title, "summary": post.display_excerpt,
        "content": absolute_html(post.lead_html + post.body_html, url), "mediaType": "text/html", "url": url,
        "attributedTo": [actor.id(request) for actor in owners],
        "published": post.published_at.isoformat(), "updated": post.updated_at.isoformat(),
        "tag": [{"type": "Hashtag", "name": "#" + tag.name.replace(" ", ""),
                 "href": request.build_absolute_uri(reverse("blog:tag", args=[tag.slug]))}
                for tag in post.ordered_tags()],
        **audience(request, owners),
    }
    if post.lead_image is not None and post.lead_image.ready:
        image = {"type": "Image", "url": request.build_absolute_uri(renditions.url(post.lead_image.fallback_name)),
                 "name": post.lead_image.alt}
        article["image"], article["attachment"] = image, [{**image, "type": "Document"}]
    return article


def digest_article(request, digest: Digest) -> dict:
    """A published digest, attributed to The Wire and its topic. Expects ``topic`` loaded for listings."""
    url = request.build_absolute_uri(digest.get_absolute_url())
    owners = [actors.wire(), actors.of_topic(digest.topic)]
    return {
        "id": url, "type": "Article", "name": digest.headline, "summary": digest.description,
        "content": absolute_html(digest.summary_html + digest.body_html, url), "mediaType": "text/html",
        "url": url, "attributedTo": [actor.id(request) for actor in owners],
        "published": digest.published_at.isoformat(), "updated": digest.updated_at.isoformat(), "tag": [],
        **audience(request, owners),
    }


def article(request, item) -> dict:
    return post_article(request, item) if isinstance(item, Post) else digest_article(request, item)


def create(request, item, actor) -> dict:
    """The ``Create`` an outbox lists for `item` (its id is the item's, so it stays the same on every page)."""
    body = article(request, item)
    return {"id": body["id"] + "#create", "type": "Create", "actor": actor.id(request),
            "published": body["published"], "to": body["to"], "cc": body["cc"], "object": body}


def with_context(document: dict) -> dict:
    return {"@context": actors.AS_CONTEXT, **document}
