"""A filtered Wire listing names its filter (issue 25): in its <title>, heading, og:title and canonical link."""
import html
import re

import pytest

from digests.factories import DigestFactory, TopicFactory

from .hostile import live_markup
from .test_metadata import meta

pytestmark = pytest.mark.django_db
BASE = "http://127.0.0.1:8000"


def head(client, url: str) -> dict[str, str]:
    """What a crawler or a link preview reads of the page at `url`, unescaped."""
    response = client.get(url)
    assert response.status_code == 200, url
    page = response.content.decode()
    return {
        "title": html.unescape(re.search(r"<title>([^<]*)</title>", page).group(1)),
        "h1": html.unescape(re.sub(r"<[^>]+>", "", re.search(r"<h1>(.*?)</h1>", page, re.S).group(1))),
        "og:title": html.unescape(meta(page, "property", "og:title")),
        "og:url": html.unescape(meta(page, "property", "og:url")),
        "canonical": html.unescape(re.search(r'<link rel="canonical" href="([^"]*)">', page).group(1)),
    }


#: (query string, what the listing is filtered by as the page names it, the canonical link's query string)
FILTERED = [
    ("?repository=pytorch/pytorch", "pytorch/pytorch", "?repository=pytorch%2Fpytorch"),
    ("?topic=&repository=PyTorch%2FPyTorch", "pytorch/pytorch", "?repository=pytorch%2Fpytorch"),  # as the form sends
    ("?topic=pytorch", "PyTorch", "?topic=pytorch"),
    ("?topic=pytorch&repository=pytorch/executorch&utm_source=x", "PyTorch · pytorch/executorch",
     "?topic=pytorch&repository=pytorch%2Fexecutorch"),
]


@pytest.mark.parametrize(("query", "named", "_canonical"), FILTERED)
def test_a_filtered_wire_names_its_filter_where_the_unfiltered_one_does_not(client, site, query, named, _canonical):
    unfiltered = head(client, "/wire/")
    assert (unfiltered["title"], unfiltered["h1"], unfiltered["og:title"]) == (
        "The Wire — RepoJournal", "The Wire", "The Wire — RepoJournal")
    filtered = head(client, "/wire/" + query)
    assert (filtered["title"], filtered["h1"], filtered["og:title"]) == (
        f"The Wire: {named} — RepoJournal", f"The Wire: {named}", f"The Wire: {named} — RepoJournal")


@pytest.mark.parametrize(("query", "_named", "canonical"), FILTERED)
def test_a_filtered_wire_is_canonical_with_its_filters_as_stored(client, site, query, _named, canonical):
    """A listing whose title names its filter is its own page, not a copy of /wire/: its canonical link
    and og:url keep the filters, spelt as stored, and drop whatever else the URL carried."""
    unfiltered = head(client, "/wire/")
    assert (unfiltered["canonical"], unfiltered["og:url"]) == (f"{BASE}/wire/", f"{BASE}/wire/")
    filtered = head(client, "/wire/" + query)
    assert (filtered["canonical"], filtered["og:url"]) == (f"{BASE}/wire/{canonical}", f"{BASE}/wire/{canonical}")


def test_a_filtered_wire_past_its_first_page_is_canonical_with_its_filter_and_page(client, site):
    for day in range(25):
        DigestFactory(topic=site.topic, headline=f"Older digest {day:02d}")
    first = client.get("/wire/?topic=pytorch").content.decode()
    following = html.unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))  # a cursor link
    for url in ("/wire/?topic=pytorch&page=2", "/wire/" + following):
        found = head(client, url)
        assert found["canonical"] == f"{BASE}/wire/?topic=pytorch&page=2", url
        assert found["og:url"] == f"{BASE}/wire/?topic=pytorch", url
    assert head(client, "/wire/?page=2")["canonical"] == f"{BASE}/wire/?page=2"


def test_a_hostile_topic_name_is_text_in_the_title_and_a_hostile_filter_value_stays_a_404(client, site):
    name = "</title><script>alert('t')</script>"
    DigestFactory(topic=TopicFactory(name=name, slug="hostile"))
    page = client.get("/wire/?topic=hostile").content.decode()
    escaped = "&lt;/title&gt;&lt;script&gt;alert(&#x27;t&#x27;)&lt;/script&gt;"
    assert f"<title>The Wire: {escaped} — RepoJournal</title>" in page
    assert live_markup(page) == []
    assert head(client, "/wire/?topic=hostile")["og:title"] == f"The Wire: {name} — RepoJournal"
    for query in ("repository=%3C%2Ftitle%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E", "topic=%22%3E%3Cscript%3Ex"):
        response = client.get(f"/wire/?{query}")
        assert response.status_code == 404, query
        assert "<script>" not in response.content.decode() and "alert(1)" not in response.content.decode()


def test_the_page_cache_keeps_a_filtered_wire_apart_from_the_unfiltered_one(client, site, settings):
    """Pages are cached per host and full URL (``reader.caching.page_key``): a cached /wire/ never answers
    /wire/?repository=..., nor the other way round."""
    settings.PAGE_CACHE_ENABLED = True
    titles = {}
    for url in ("/wire/", "/wire/?repository=pytorch/pytorch", "/wire/?topic=pytorch") * 2:
        response = client.get(url)
        titles.setdefault(url, []).append((response["X-Page-Cache"], re.search(r"<title>([^<]*)", response.text)[1]))
    assert titles == {
        "/wire/": [("miss", "The Wire — RepoJournal"), ("hit", "The Wire — RepoJournal")],
        "/wire/?repository=pytorch/pytorch": [("miss", "The Wire: pytorch/pytorch — RepoJournal"),
                                              ("hit", "The Wire: pytorch/pytorch — RepoJournal")],
        "/wire/?topic=pytorch": [("miss", "The Wire: PyTorch — RepoJournal"),
                                 ("hit", "The Wire: PyTorch — RepoJournal")],
    }
