"""Template helpers for the reader site: absolute URLs, JSON-LD, pagination links."""
import json

from django import template
from django.utils.safestring import mark_safe

from repojournal import structured_data

register = template.Library()

_JSON_ESCAPES = {ord("<"): "\\u003C", ord(">"): "\\u003E", ord("&"): "\\u0026"}


@register.filter
def absolute(path: str) -> str:
    """A site path as an absolute URL on SITE_URL (canonical links, OpenGraph)."""
    return structured_data.absolute(path)


@register.filter
def squash(text) -> str:
    """Collapse runs of whitespace (newlines from rendered HTML) into single spaces."""
    return " ".join(str(text or "").split())


@register.simple_tag
def json_ld(data: dict):
    """``<script type="application/ld+json">`` whose content cannot break out of the element."""
    payload = json.dumps(data, ensure_ascii=False).translate(_JSON_ESCAPES)
    return mark_safe(f'<script type="application/ld+json">{payload}</script>')


@register.simple_tag
def breadcrumb_json_ld(crumbs):
    return json_ld(structured_data.breadcrumb_list(crumbs))


@register.simple_tag(takes_context=True)
def page_link(context, page, direction: str) -> str:
    """The current URL's query string (filters kept) pointing at the next or previous page.

    Links carry the page's keyset cursor (see repojournal.pagination); the link back
    to page 1 is the plain URL.
    """
    query = context["request"].GET.copy()
    query.pop("page", None)
    query.pop("cursor", None)
    if direction == "next":
        query["cursor"] = page.next_cursor
    elif page.number > 2:
        query["cursor"] = page.previous_cursor
    return f"?{query.urlencode()}" if query else context["request"].path


@register.simple_tag
def digest_json_ld(digest):
    return json_ld(structured_data.news_article(digest))


@register.simple_tag
def faq_json_ld(digest):
    return json_ld(structured_data.faq_page(digest))


@register.simple_tag
def post_json_ld(post):
    return json_ld(structured_data.blog_posting(post))
