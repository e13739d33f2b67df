"""The page chrome (head links, header, breadcrumbs, footer) is rendered once per worker for each set
of its arguments (``chrome`` in digests/templatetags/reader.py); every page must still get its own."""
import html
import re

import pytest
from django.urls import reverse, set_script_prefix

from blog.factories import PostFactory
from digests.templatetags import reader
from digests.templatetags.reader import CHROME_FRAGMENTS, _rendered_chrome

HOSTILE = '"><script>alert(1)</script>'


@pytest.fixture(autouse=True)
def fresh_fragments():
    _rendered_chrome.cache_clear()
    yield
    _rendered_chrome.cache_clear()


def header(page: str) -> str:
    return page[page.index('<header class="site-header">'):page.index("</header>")]


def current_links(page: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)" aria-current="page">', header(page))


def search_box(page: str) -> str:
    return re.search(r'<input id="site-search-q" type="search" name="q" value="([^"]*)"', page).group(1)


@pytest.mark.django_db
def test_the_header_marks_only_the_current_section_on_every_request(client, site):
    for _ in range(2):  # the second round is served from the workers' fragments
        assert current_links(client.get(reverse("digests:index")).content.decode()) == [reverse("digests:index")]
        assert current_links(client.get(reverse("blog:index")).content.decode()) == [reverse("blog:index")]
        assert current_links(client.get(reverse("blog:tags")).content.decode()) == []
        assert current_links(client.get(reverse("home")).content.decode()) == []


@pytest.mark.django_db
def test_the_search_box_holds_the_escaped_query_and_is_empty_elsewhere(client, site):
    found = client.get(reverse("search"), {"q": HOSTILE}).content.decode()
    assert search_box(found) == html.escape(HOSTILE)
    assert "<script>alert(1)" not in found
    assert search_box(client.get(reverse("search"), {"q": "executorch"}).content.decode()) == "executorch"
    assert search_box(client.get(reverse("blog:index")).content.decode()) == ""


@pytest.mark.django_db
def test_renaming_a_tag_renames_its_feeds_in_the_head_and_footer_at_once(client):
    post = PostFactory(tags=["old-name"])
    tag = post.tags.get()
    url = reverse("blog:tag", args=[tag.slug])
    page = client.get(url).content.decode()
    assert 'title="Posts tagged old-name (Atom)"' in page and ">Posts tagged old-name (Atom)</a>" in page
    tag.name = "New Name"
    tag.save()
    page = client.get(url).content.decode()
    assert 'title="Posts tagged New Name (Atom)"' in page and ">Posts tagged New Name (Atom)</a>" in page
    assert "old-name (" not in page


@pytest.mark.django_db
def test_breadcrumbs_follow_an_edited_title(client):
    post = PostFactory(title="A first title")
    url = post.get_absolute_url()
    assert '<span aria-current="page">A first title</span>' in client.get(url).content.decode()
    post.title = "A second title"
    post.save()
    page = client.get(url).content.decode()
    assert '<span aria-current="page">A second title</span>' in page
    assert "A first title" not in page


@pytest.mark.django_db
def test_links_follow_the_script_prefix_the_site_is_mounted_under(client, site):
    path = reverse("blog:index")
    set_script_prefix("/news/")  # what the WSGI handler does for a site mounted under /news
    try:
        mounted = client.get(path).content.decode()
    finally:
        set_script_prefix("/")
    assert '<a class="brand" href="/news/">' in header(mounted)
    assert 'action="/news/search/"' in mounted and 'href="/news/sitemap.xml"' in mounted
    plain = client.get(path).content.decode()
    assert '<a class="brand" href="/">' in header(plain) and "/news/" not in plain


@pytest.mark.django_db
def test_fragments_are_bounded_however_many_queries_readers_send(client, site):
    assert _rendered_chrome.cache_info().maxsize == CHROME_FRAGMENTS
    for number in range(5):
        client.get(reverse("search"), {"q": f"query {number}"})
    assert _rendered_chrome.cache_info().currsize >= 5  # one header per query...
    assert _rendered_chrome.cache_info().currsize <= CHROME_FRAGMENTS  # ...within the bound


@pytest.mark.django_db
def test_a_fragment_is_the_template_rendered_with_just_its_arguments(client, site):
    """The chrome carries nothing from the page's context but what the tag passes it."""
    response = client.get(reverse("blog:index"))
    page, links, feeds = response.content.decode(), response.context["links"], response.context["feeds"]
    footer = reader._rendered_chrome("chrome/site_footer.html", tuple(links.items()), (("feeds", tuple(feeds)),))
    assert footer in page
    assert footer.startswith('<footer class="site-footer">') and footer.endswith("</footer>")
