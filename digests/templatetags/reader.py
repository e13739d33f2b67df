"""Template helpers for the reader site: absolute URLs, JSON-LD, pagination links, the page chrome."""
import functools
import json
from html import escape

from django import template
from django.http import QueryDict
from django.template.loader import get_template
from django.utils import timezone
from django.utils.safestring import mark_safe

from publishing import structured_data
from publishing.dates import dated, month_names

from ..cards import display_title

register = template.Library()

#: A repository page's reference -- linked or not, merged or not -- filled with escaped values (``reference_items``).
REFERENCE_ITEMS = {
    (True, True): '<li class="reference"><a href="{url}" rel="noopener">{title} <span aria-hidden="true">↗</span></a>'
                  ' <span class="meta">merged <time datetime="{machine}">{merged}</time></span></li>',
    (True, False): '<li class="reference"><a href="{url}" rel="noopener">{title} <span aria-hidden="true">↗</span></a></li>',
    (False, True): '<li class="reference">{title} <span class="meta">merged <time datetime="{machine}">{merged}</time>'
                   '</span></li>',
    (False, False): '<li class="reference">{title}</li>',
}
_JSON_ESCAPES = {ord("<"): "\\u003C", ord(">"): "\\u003E", ord("&"): "\\u0026"}
#: Rendered chrome fragments kept per process (a few per listing: its feeds, its breadcrumbs).
CHROME_FRAGMENTS = 1024


@register.simple_tag(takes_context=True)
def chrome(context, template_name: str, **values) -> str:
    """`template_name` (a part of every page: header, footer, head links, breadcrumbs) rendered with
    `values` and the site's ``links``, and nothing else.

    Such a fragment is a pure function of its arguments, so each worker renders it once per
    distinct set of them and prints the same string afterwards. Rendering the chrome variable by
    variable on every request cost about a tenth of a listing page's CPU (docs/benchmarks.md).
    It holds no database content beyond what the arguments carry: a renamed tag gives new
    arguments, so a new fragment, at once. Fragments see no request and run no context
    processors; pass what they print.
    """
    links = tuple(context["links"].items())
    return _rendered_chrome(template_name, links, tuple((name, _hashable(value)) for name, value in values.items()))


@functools.lru_cache(maxsize=CHROME_FRAGMENTS)
def _rendered_chrome(template_name: str, links: tuple, values: tuple) -> str:
    return mark_safe(get_template(template_name).render({"links": dict(links), **dict(values)}))


def _hashable(value):
    """Lists (feeds, breadcrumbs) as tuples, so the arguments can key the fragment."""
    return tuple(_hashable(item) for item in value) if isinstance(value, list | tuple) else value


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

    Links carry the page's keyset cursor (see publishing.pagination); the link back
    to page 1 is the plain URL.
    """
    query = QueryDict(mutable=True)  # the request's, less the position (GET.copy() deep-copies every value)
    for key, values in context["request"].GET.lists():
        if key not in ("page", "cursor"):
            query.setlist(key, values)
    if direction == "next":
        query["cursor"] = page.next_cursor
    elif page.number > 2:
        query["cursor"] = page.previous_cursor
    return f"?{query.urlencode()}" if query else context["request"].path


@register.simple_tag
def post_json_ld(post):
    """The BlogPosting stored with the post (blog/cards.py) and its last change."""
    return json_ld({**post.posting, "dateModified": structured_data.iso_date(post.updated_at)})


@register.simple_tag
def reference_items(references) -> str:
    """The ``<li>`` of each reference of a repository page (or "No references yet."), escaped.

    `references` are ``Reference`` instances or rows with their ``kind``,
    ``title``, ``number``, ``url`` and ``merged_at``.

    Written in Python rather than as a template loop: twenty rows of links and
    two formatted dates each cost the page more than all of its queries. Every
    value from the database goes through ``html.escape`` (what ``format_html``
    applies to a plain string) and the month names and time zone are looked up once.
    """
    months, zone = month_names()[0], timezone.get_current_timezone()
    items = [_reference_item(reference, months, zone) for reference in references]
    return mark_safe("".join(items)) if items else mark_safe("<li>No references yet.</li>")


def _reference_item(reference, months: tuple[str, ...], zone) -> str:
    merged = reference.merged_at
    machine, day = dated(merged, months, zone) if merged is not None else ("", "")
    return REFERENCE_ITEMS[bool(reference.url), merged is not None].format(
        url=escape(reference.url), title=escape(display_title(reference.kind, reference.title, reference.number)),
        machine=escape(machine), merged=escape(day),
    )
