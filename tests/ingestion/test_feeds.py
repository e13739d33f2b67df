"""Feed sources fetched from a real local HTTP server become blog posts, keyed by entry id."""
import pytest

from blog.factories import AuthorFactory
from blog.models import Post
from ingestion.feeds import FeedError, fetch_source
from ingestion.models import FeedEntry, FeedSource, IngestionRun
from publishing.workflow import Status

pytestmark = pytest.mark.django_db

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>PyTorch Dev Blog</title>
  <id>urn:example:feed</id>
  <updated>2026-06-29T12:00:00Z</updated>
  <entry>
    <id>urn:example:entry:1</id>
    <title>{title}</title>
    <link href="/blog/compile-tips"/>
    <published>2026-06-28T09:30:00Z</published>
    <updated>2026-06-28T09:30:00Z</updated>
    <author><name>Edward Yang</name></author>
    <author><name>Alban Desmaison</name></author>
    <category term="compiler"/>
    <summary>Short &lt;b&gt;summary&lt;/b&gt;.</summary>
    <content type="html">&lt;p&gt;See &lt;a href="/docs/compile"&gt;the docs&lt;/a&gt;.&lt;/p&gt;

&lt;p&gt;Second paragraph&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror="alert(2)"&gt;&lt;/p&gt;</content>
  </entry>
  <entry>
    <id>urn:example:entry:2</id>
    <title>No author here</title>
    <link href="https://example.org/elsewhere"/>
    <updated>2026-06-27T08:00:00Z</updated>
    <content type="html">&lt;p&gt;Body two&lt;/p&gt;</content>
  </entry>
</feed>
"""

RSS = """<?xml version="1.0"?>
<rss version="2.0"><channel><title>RSS</title><link>https://example.org/</link><description>d</description>
<item><guid isPermaLink="false">rss-1</guid><title>An RSS item</title><link>https://example.org/1</link>
<description>&lt;p&gt;Hello &lt;a href="rel/path"&gt;rel&lt;/a&gt;&lt;/p&gt;</description>
<category>news</category><pubDate>Mon, 29 Jun 2026 10:00:00 GMT</pubDate></item>
</channel></rss>
"""


def atom(title: str = "Compile &amp; ship") -> str:
    return ATOM.format(title=title)


@pytest.fixture
def source(httpserver):
    feed = FeedSource.objects.create(url=httpserver.url_for("/feeds/atom.xml"), default_tags="pytorch, blog")
    feed.default_authors.add(AuthorFactory(name="RepoJournal Desk", slug="desk"))
    return feed


def serve(httpserver, body: str, path: str = "/feeds/atom.xml", **headers):
    httpserver.expect_oneshot_request(path).respond_with_data(
        body, content_type="application/atom+xml", headers=headers)


def test_entries_become_draft_posts_with_authors_tags_and_safe_html(httpserver, source):
    serve(httpserver, atom())
    counts = fetch_source(source)
    assert (counts.created, counts.updated, counts.unchanged) == (2, 0, 0)
    post = FeedEntry.objects.get(entry_id="urn:example:entry:1").post
    assert post.title == "Compile & ship"
    assert post.status == Status.DRAFT and post.published_at.isoformat() == "2026-06-28T09:30:00+00:00"  # the entry's
    assert [a.name for a in post.ordered_authors()] == ["Edward Yang", "Alban Desmaison"]
    assert sorted(post.tags.names()) == ["blog", "compiler", "pytorch"]
    base = httpserver.url_for("/").rstrip("/")
    assert f'href="{base}/docs/compile"' in post.body_html  # relative link resolved against the feed
    assert "Second paragraph" in post.body_html
    assert "<script" not in post.body_html and "onerror" not in post.body_html
    assert post.excerpt == "Short summary."
    assert post.disclosure == f"Originally published at {base}/blog/compile-tips"
    other = FeedEntry.objects.get(entry_id="urn:example:entry:2").post
    assert [a.name for a in other.ordered_authors()] == ["RepoJournal Desk"]  # the source's default
    source.refresh_from_db()
    assert source.title == "PyTorch Dev Blog" and source.last_fetched_at is not None
    assert IngestionRun.objects.get().created == 2
    assert not Post.objects.published().exists()


def test_refetching_updates_instead_of_duplicating(httpserver, source):
    serve(httpserver, atom())
    fetch_source(source)
    post_id = FeedEntry.objects.get(entry_id="urn:example:entry:1").post_id
    serve(httpserver, atom())
    again = fetch_source(source)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    serve(httpserver, atom("Compile, then ship"))
    changed = fetch_source(source)
    assert (changed.created, changed.updated, changed.unchanged) == (0, 1, 1)
    assert Post.objects.count() == 2
    assert Post.objects.get(pk=post_id).title == "Compile, then ship"


def test_conditional_fetch_sends_etag_and_304_changes_nothing(httpserver, source):
    serve(httpserver, atom(), ETag='"v1"', **{"Last-Modified": "Mon, 29 Jun 2026 12:00:00 GMT"})
    fetch_source(source)
    httpserver.expect_oneshot_request(
        "/feeds/atom.xml", headers={"If-None-Match": '"v1"', "If-Modified-Since": "Mon, 29 Jun 2026 12:00:00 GMT"}
    ).respond_with_data("", status=304)
    counts = fetch_source(source)
    httpserver.check_assertions()
    assert (counts.created, counts.updated, counts.unchanged) == (0, 0, 0)
    assert Post.objects.count() == 2


def test_sources_that_publish_entries(httpserver, source):
    source.publish_entries = True
    source.save()
    serve(httpserver, atom())
    fetch_source(source)
    post = FeedEntry.objects.get(entry_id="urn:example:entry:1").post
    assert post.status == Status.PUBLISHED
    assert post.published_at.isoformat() == "2026-06-28T09:30:00+00:00"
    assert Post.objects.published().count() == 2


def test_rss_items_and_relative_links(httpserver):
    source = FeedSource.objects.create(url=httpserver.url_for("/rss"))
    httpserver.expect_request("/rss").respond_with_data(RSS, content_type="application/rss+xml")
    fetch_source(source)
    post = FeedEntry.objects.get(entry_id="rss-1").post
    assert post.title == "An RSS item"
    assert list(post.tags.names()) == ["news"]
    assert f'href="{httpserver.url_for("/rel/path")}"' in post.body_html


@pytest.mark.parametrize("status, body, message", [(500, "oops", "HTTP 500"),
                                                   (200, "<html><body>not a feed", "not a feed")])
def test_bad_feeds_fail_the_run_and_create_nothing(httpserver, source, status, body, message):
    httpserver.expect_request("/feeds/atom.xml").respond_with_data(body, status=status, content_type="text/html")
    with pytest.raises(FeedError, match=message):
        fetch_source(source)
    assert not Post.objects.exists()
    run = IngestionRun.objects.get()
    assert run.status == "failed" and message in run.error


# --- the source's author and date are kept (issue 19) ------------------------------------------

FEED_AUTHOR_ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Old Notes</title>
  <id>urn:example:old</id>
  <updated>2013-05-02T10:00:00Z</updated>
  <author><name>Soumith Chintala</name></author>
  <entry>
    <id>urn:example:old:1</id>
    <title>Torch7 turns one</title>
    <link href="https://example.org/torch7"/>
    <published>2013-05-01T08:15:00Z</published>
    <updated>2013-05-02T10:00:00Z</updated>
    <content type="html">&lt;p&gt;A year of Torch7.&lt;/p&gt;</content>
  </entry>
  <entry>
    <id>urn:example:old:2</id>
    <title>Guest post</title>
    <published>2013-06-01T08:00:00Z</published>
    <author><name>Ronan Collobert</name></author>
    <content type="html">&lt;p&gt;Hello.&lt;/p&gt;</content>
  </entry>
</feed>
"""
NOBODY_ATOM = FEED_AUTHOR_ATOM.replace("  <author><name>Soumith Chintala</name></author>\n", "", 1)


def test_the_feeds_author_applies_to_entries_that_name_none(httpserver, source):
    serve(httpserver, FEED_AUTHOR_ATOM)
    fetch_source(source)
    torch = FeedEntry.objects.get(entry_id="urn:example:old:1").post
    guest = FeedEntry.objects.get(entry_id="urn:example:old:2").post
    assert [a.name for a in torch.ordered_authors()] == ["Soumith Chintala"]  # not the source's default
    assert [a.name for a in guest.ordered_authors()] == ["Ronan Collobert"]  # an entry's own author wins


def test_drafts_keep_the_entrys_date_through_publication(httpserver, source, client, publisher):
    from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
    from django.urls import reverse

    serve(httpserver, FEED_AUTHOR_ATOM)
    fetch_source(source)
    post = FeedEntry.objects.get(entry_id="urn:example:old:1").post
    assert post.status == Status.DRAFT and post.published_at.isoformat() == "2013-05-01T08:15:00+00:00"
    assert not Post.objects.published().filter(pk=post.pk).exists()  # a dated draft is still a draft
    client.force_login(publisher)
    client.post(reverse("admin:blog_post_changelist"), {"action": "publish", ACTION_CHECKBOX_NAME: [str(post.pk)]})
    post.refresh_from_db()
    assert post.status == Status.PUBLISHED and post.published_at.isoformat() == "2013-05-01T08:15:00+00:00"
    client.logout()
    page = client.get(post.get_absolute_url()).content.decode()
    assert '<time datetime="2013-05-01' in page and "May 1, 2013" in page


def test_an_entry_with_no_author_anywhere_is_never_published(httpserver, client, publisher):
    """No entry, feed or source author: the post arrives as a draft, even from a publishing source,
    and no path publishes it until an editor gives it a byline (the form requires one too)."""
    import json

    from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
    from django.urls import reverse

    from accounts.models import ApiToken

    source = FeedSource.objects.create(url=httpserver.url_for("/feeds/atom.xml"), publish_entries=True)
    serve(httpserver, NOBODY_ATOM)
    fetch_source(source)
    post = FeedEntry.objects.get(entry_id="urn:example:old:1").post
    assert post.ordered_authors() == [] and post.status == Status.DRAFT
    assert FeedEntry.objects.get(entry_id="urn:example:old:2").post.status == Status.PUBLISHED  # it has an author

    client.force_login(publisher)
    response = client.post(reverse("admin:blog_post_changelist"),
                           {"action": "publish", ACTION_CHECKBOX_NAME: [str(post.pk)]}, follow=True)
    assert any("no author" in str(message) for message in response.context["messages"])
    raw = ApiToken.issue(publisher, "t", ["publish"])[1]
    refused = client.post(f"/api/v1/posts/{post.slug}/status", json.dumps({"status": "published"}),
                          content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert refused.status_code in (400, 403) and "no author" in refused.json()["detail"]
    post.refresh_from_db()
    assert post.status == Status.DRAFT
