"""Template context shared by every reader page."""
import functools

from django.templatetags.static import static
from django.urls import get_script_prefix, get_urlconf, reverse

#: Static files every page links to, by the names base.html uses.
ASSETS = {"stylesheet": "css/site.css", "logo": "img/logo.svg"}
#: The site-wide navigation, by the names base.html uses.
NAVIGATION = {
    "home": "home", "wire": "digests:index", "posts": "blog:index", "topics": "digests:topics",
    "tags": "blog:tags", "search": "search", "sitemap": "sitemap",
}


@functools.cache
def _navigation(urlconf, prefix: str) -> dict[str, str]:
    links = {key: reverse(name, urlconf=urlconf) for key, name in NAVIGATION.items()}
    return links | {key: static(path) for key, path in ASSETS.items()}


def navigation(request) -> dict:
    """``links``: the header and footer URLs and the stylesheet and logo, found once per process (and URLconf).

    Reversing URLs and asking the static files storage on every page cost more
    than the rest of the page header.
    """
    return {"links": _navigation(get_urlconf(), get_script_prefix())}
