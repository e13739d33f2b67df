"""Nothing unpublished -- draft, in review, scheduled, archived -- reaches any reader surface."""
import datetime

import pytest
from django.utils import timezone

from .conftest import hidden_states

STATES = [label for label, _state in hidden_states()]

#: Every reader surface with something published it must show (so an empty page cannot pass).
PUBLIC_SURFACES = {
    "/": "published headline 2", "/wire/": "published headline 0", "/wire/?topic=pytorch": "published headline 1",
    "/wire/?repository=pytorch/pytorch": "published headline 1", "/topics/": "pytorch",
    "/topics/pytorch/": "published headline 2", "/repos/pytorch/pytorch/": "published headline 0 change 2",
    "/repos/pytorch/executorch/": "published headline 0 change 1", "/posts/": "eager cuda memory",
    "/tags/": "/tags/rl/", "/tags/cuda/": "rl with torch.compile", "/authors/edward-yang/": "eager cuda memory",
    "/sitemap.xml": "/wire/digest-", "/robots.txt": "sitemap",
    **{
        f"{base}feed.{fmt}": expected
        for base, expected in (
            ("/wire/", "published headline 2"), ("/posts/", "eager cuda memory"), ("/tags/cuda/", "rl with torch.compile"),
            ("/authors/edward-yang/", "rl with torch.compile"), ("/topics/pytorch/", "published headline 1"),
            ("/repos/pytorch/pytorch/", "published headline 0"),
        )
        for fmt in ("atom", "rss", "json")
    },
}


def secret_words(label: str) -> str:
    return f"Secret{label}".lower()


@pytest.mark.django_db
@pytest.mark.parametrize("url, expected", PUBLIC_SURFACES.items())
def test_public_surfaces_show_published_content_and_nothing_hidden(client, site, url, expected):
    response = client.get(url)
    assert response.status_code == 200
    body = response.content.decode().lower()
    assert expected in body
    for label in STATES:
        assert secret_words(label) not in body, f"{label} content leaked on {url}"


@pytest.mark.django_db
@pytest.mark.parametrize("label", STATES)
def test_hidden_items_and_what_only_they_use_are_404(client, site, label):
    digest, post = site.hidden_digests[label], site.hidden_posts[label]
    secret = secret_words(label)
    for url in [
        digest.get_absolute_url(), post.get_absolute_url(), f"/topics/{secret}-topic/", f"/repos/{secret}/repo/",
        f"/tags/{secret}tag/", f"/authors/{secret}-author/", f"/wire/?topic={secret}-topic",
        f"/wire/?repository={secret}/repo", f"/topics/{secret}-topic/feed.atom", f"/repos/{secret}/repo/feed.rss",
        f"/tags/{secret}tag/feed.json", f"/authors/{secret}-author/feed.atom",
    ]:
        assert client.get(url).status_code == 404, url


@pytest.mark.django_db
@pytest.mark.parametrize("label", STATES)
def test_search_never_finds_hidden_items(client, site, label):
    body = client.get("/search/", {"q": f"Secret{label}"}).content.decode().lower()
    assert "0 results" in body
    assert f"secret{label} headline" not in body and f"secret{label} post" not in body
    # Their references are hidden too: only a published digest makes a reference public.
    assert client.get("/search/", {"q": "Published headline 0 change"}).content.decode().count('class="hit"') >= 1


@pytest.mark.django_db
def test_tag_index_counts_published_posts_only(client, site):
    body = client.get("/tags/").content.decode()
    # "cuda" is on both published posts and on every hidden post.
    assert 'href="/tags/cuda/">cuda</a> <span class="count">2 posts</span>' in body
    assert "1 post<" in body  # e.g. "rl", on one published post


@pytest.mark.django_db
def test_author_pages_list_co_authored_posts_but_not_hidden_ones(client, site):
    body = client.get("/authors/edward-yang/").content.decode()
    assert "RL with torch.compile" in body  # ezyang is the second author there
    assert "Eager CUDA memory" in body
    assert "secret" not in body.lower()


@pytest.mark.django_db
def test_scheduled_content_appears_once_its_time_has_come(client, site):
    digest, post = site.hidden_digests["scheduled"], site.hidden_posts["scheduled"]
    assert client.get(digest.get_absolute_url()).status_code == 404
    past = timezone.now() - datetime.timedelta(minutes=1)
    type(digest).objects.filter(pk=digest.pk).update(published_at=past)
    type(post).objects.filter(pk=post.pk).update(published_at=past)
    assert client.get(digest.get_absolute_url()).status_code == 200
    assert client.get(post.get_absolute_url()).status_code == 200
    assert "Secretscheduled headline" in client.get("/wire/feed.atom").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("label", STATES)
def test_staff_preview_is_the_only_way_to_see_hidden_items(client, site, label, admin_user):
    digest, post = site.hidden_digests[label], site.hidden_posts[label]
    preview_urls = [f"/preview/digests/{digest.pk}/", f"/preview/posts/{post.pk}/"]
    for url in preview_urls:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(admin_user)
    digest_page = client.get(preview_urls[0]).content.decode()
    assert f"Secret{label} headline" in digest_page and "readers cannot see this yet" in digest_page
    assert 'name="robots" content="noindex, nofollow"' in digest_page
    post_page = client.get(preview_urls[1]).content.decode()
    assert f"Secret{label} post" in post_page and f"Secret{label} body words." in post_page
