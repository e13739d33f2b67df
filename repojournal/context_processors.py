"""Template context shared by every reader page."""
import functools

from django.urls import get_script_prefix, get_urlconf, reverse

#: The site-wide navigation, by the names base.html uses.
NAVIGATION = {
    "home": "home", "wire": "digests:index", "posts": "blog:index", "topics": "digests:topics",
    "tags": "blog:tags", "search": "search", "sitemap": "sitemap",
}


@functools.cache
def _navigation(urlconf, prefix: str) -> dict[str, str]:
    return {key: reverse(name, urlconf=urlconf) for key, name in NAVIGATION.items()}


def navigation(request) -> dict:
    """``links``: the header and footer URLs, reversed once per process (and URLconf), not on every page."""
    return {"links": _navigation(get_urlconf(), get_script_prefix())}
