"""The public URL map: every named route reverses to, and resolves from, the same path.

The root URLconf orders its routes for a cheap resolve (fixed prefixes before the
includes mounted at ""); these pin that the order changes no address.
"""
import pytest
from django.urls import resolve, reverse

ROUTES = [
    ("home", {}, "/"),
    ("search", {}, "/search/"),
    ("sitemap", {}, "/sitemap.xml"),
    ("robots", {}, "/robots.txt"),
    ("ingestion:github-webhook", {}, "/webhooks/github"),
    ("digests:index", {}, "/wire/"),
    ("digests:feed", {"fmt": "atom"}, "/wire/feed.atom"),
    ("digests:detail", {"slug": "pytorch-2026-06-29"}, "/wire/pytorch-2026-06-29/"),
    ("digests:topics", {}, "/topics/"),
    ("digests:topic", {"slug": "pytorch"}, "/topics/pytorch/"),
    ("digests:topic_feed", {"slug": "pytorch", "fmt": "rss"}, "/topics/pytorch/feed.rss"),
    ("digests:repository", {"owner": "pytorch", "name": "executorch"}, "/repos/pytorch/executorch/"),
    ("digests:repository_feed", {"owner": "pytorch", "name": "executorch", "fmt": "atom"},
     "/repos/pytorch/executorch/feed.atom"),
    ("digests:preview", {"pk": 7}, "/preview/digests/7/"),
    ("blog:index", {}, "/posts/"),
    ("blog:feed", {"fmt": "atom"}, "/posts/feed.atom"),
    ("blog:post", {"slug": "hello-world"}, "/posts/hello-world/"),
    ("blog:tags", {}, "/tags/"),
    ("blog:tag", {"slug": "pytorch"}, "/tags/pytorch/"),
    ("blog:tag_feed", {"slug": "pytorch", "fmt": "rss"}, "/tags/pytorch/feed.rss"),
    ("blog:author", {"slug": "ada"}, "/authors/ada/"),
    ("blog:author_feed", {"slug": "ada", "fmt": "atom"}, "/authors/ada/feed.atom"),
    ("blog:preview", {"pk": 7}, "/preview/posts/7/"),
    ("editbar:purge", {"kind": "post", "pk": 7}, "/edit-bar/purge/post/7/"),
    ("images:rendition", {"name": f"{'a' * 64}/v1-480.avif"}, f"/media/{'a' * 64}/v1-480.avif"),
]


@pytest.mark.parametrize(("name", "kwargs", "address"), ROUTES, ids=[route[0] for route in ROUTES])
def test_named_routes_keep_their_addresses(name, kwargs, address):
    assert reverse(name, kwargs=kwargs) == address
    match = resolve(address)
    captured = {key: value for key, value in match.kwargs.items() if key not in match.extra_kwargs}
    assert (match.view_name, captured) == (name, kwargs)


@pytest.mark.parametrize("address", ["/webhooks/", "/webhooks/github/", "/wire/feed.txt", "/posts/a/b/", "/tags/a/b/"])
def test_near_misses_are_not_routes(client, address):
    assert client.get(address).status_code == 404
