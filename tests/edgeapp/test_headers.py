"""Cache-Control and Surrogate-Key on real pages: shared caches keep anonymous reads only."""
import pytest
from django.urls import reverse

from edge.keys import tag_key
from edge.middleware import KEY_HEADER

pytestmark = pytest.mark.django_db

PUBLIC = "public, max-age=60, s-maxage=86400, stale-while-revalidate=60, stale-if-error=86400"


def keys(response) -> set[str]:
    return set(response[KEY_HEADER].split())


def test_a_post_page_is_shared_and_names_its_post_and_tags(client, content):
    response = client.get(content.first.get_absolute_url())
    assert response.status_code == 200
    assert response["Cache-Control"] == PUBLIC
    assert {"site", f"post-{content.first.pk}", tag_key("python")} <= keys(response)
    assert f"post-{content.second.pk}" not in keys(response) and tag_key("rust") not in keys(response)
    assert "ETag" in response


def test_the_home_page_names_each_card_and_its_listings(client, content):
    response = client.get("/")
    assert {"site", "posts", "digests", f"post-{content.first.pk}", f"post-{content.second.pk}",
            f"digest-{content.digest.pk}"} <= keys(response)


@pytest.mark.parametrize("path, expected", [
    ("/posts/", {"posts"}), ("/posts/feed.atom", {"posts"}), ("/wire/", {"digests", "topics"}),
    ("/wire/feed.json", {"digests"}), ("/sitemap.xml", {"sitemap"}), ("/robots.txt", {"site"}),
    ("/tags/", {"tags"}), ("/search/?q=first", {"search"}),
])
def test_listings_feeds_and_sitemaps_are_shared(client, content, path, expected):
    response = client.get(path)
    assert response.status_code == 200
    assert response["Cache-Control"] == PUBLIC
    assert expected | {"site"} <= keys(response)


def test_tag_author_topic_and_repository_pages_name_their_subject(client, content):
    tag = content.first.tags.get()
    assert tag_key("python") in keys(client.get(reverse("blog:tag", args=[tag.slug])))
    assert f"author-{content.ada.pk}" in keys(client.get(content.ada.get_absolute_url()))
    assert f"topic-{content.topic.pk}" in keys(client.get(content.topic.get_absolute_url()))
    page = keys(client.get(content.repository.get_absolute_url()))
    assert {f"repo-{content.repository.pk}", f"digest-{content.digest.pk}"} <= page
    digest_page = keys(client.get(content.digest.get_absolute_url()))
    assert {f"digest-{content.digest.pk}", f"topic-{content.topic.pk}"} <= digest_page


def test_the_public_api_is_shared_with_its_family_key(client, content):
    response = client.get("/api/v1/posts/")
    assert response["Cache-Control"] == PUBLIC
    assert keys(response) == {"site", "api", "api-posts"}
    assert keys(client.get(f"/api/v1/digests/{content.digest.slug}")) == {"site", "api", "api-digests"}


def test_a_session_an_authorization_header_or_a_write_is_never_shared(client, content, admin_user):
    url = content.first.get_absolute_url()
    assert_private(client.get(url, HTTP_AUTHORIZATION="Bearer nothing"))
    assert_private(client.post(url))
    client.force_login(admin_user)
    assert_private(client.get(url))
    assert_private(client.get("/admin/"))
    assert_private(client.get(reverse("blog:preview", args=[content.first.pk])))


def test_the_admin_login_webhooks_and_missing_pages_are_private(client, content):
    assert_private(client.get("/admin/login/"))  # sets the CSRF cookie
    assert_private(client.post("/webhooks/github/", data=b"{}", content_type="application/json"))
    assert_private(client.get("/posts/no-such-post/"))


def test_unrelated_cookies_still_get_the_shared_page_without_vary_cookie(client, content):
    client.cookies["csrftoken"] = "a" * 32  # well formed (a malformed one is replaced: a cookie set, private)
    client.cookies["_ga"] = "GA1.1"
    response = client.get(content.first.get_absolute_url())
    assert response["Cache-Control"] == PUBLIC
    assert "cookie" not in response.get("Vary", "").lower()
    assert not response.cookies


def test_a_page_cache_hit_carries_the_keys_it_was_stored_with(client, content, settings):
    settings.PAGE_CACHE_ENABLED = True
    url = content.first.get_absolute_url()
    miss, hit = client.get(url), client.get(url)
    assert (miss["X-Page-Cache"], hit["X-Page-Cache"]) == ("miss", "hit")
    assert keys(hit) == keys(miss) and f"post-{content.first.pk}" in keys(hit)
    assert hit["Cache-Control"] == PUBLIC


@pytest.mark.parametrize("page_cache", [False, True])
def test_a_revalidation_answers_304_still_shared_under_the_same_keys(client, content, settings, page_cache):
    """Varnish revalidates a stale object with If-None-Match: the 304 must keep it public and keyed."""
    settings.PAGE_CACHE_ENABLED = page_cache
    url = content.first.get_absolute_url()
    first = client.get(url)
    again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    assert again["Cache-Control"] == PUBLIC and keys(again) == keys(first)
    api = client.get("/api/v1/posts/" + content.first.slug)
    api_again = client.get("/api/v1/posts/" + content.first.slug, HTTP_IF_NONE_MATCH=api["ETag"])
    assert api_again.status_code == 304 and api_again["Cache-Control"] == PUBLIC and keys(api_again) == keys(api)


def test_head_is_shared_like_get(client, content):
    response = client.head(content.first.get_absolute_url())
    assert response["Cache-Control"] == PUBLIC and f"post-{content.first.pk}" in keys(response)


def test_cloudflare_gets_cache_tags_too(client, content, settings):
    settings.EDGE_PURGE_BACKEND = "cloudflare"
    response = client.get(content.first.get_absolute_url())
    assert set(response["Cache-Tag"].split(",")) == keys(response)


def test_a_listing_longer_than_the_cap_names_the_kind_instead(client, content, settings):
    settings.EDGE_MAX_KEYS_PER_KIND = 1
    found = keys(client.get("/posts/"))
    assert "post-any" in found and not any(key.startswith("post-") and key[5:].isdigit() for key in found)


def assert_private(response):
    assert "private" in response["Cache-Control"], response["Cache-Control"]
    assert KEY_HEADER not in response and "Cache-Tag" not in response
