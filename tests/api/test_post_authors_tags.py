"""The byline and tags API post lists read from ``Post.authors_tags`` stay true: every change that
re-renders a post's card (blog/cards.py) refreshes them too, and the list answers what the schema
would answer from the live bylines and tags."""
import importlib
import io

import pytest
from django.apps import apps
from django.core.management import call_command
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostAuthor
from tests.rerenders import run_rerenders

from .test_list_shapes import through_schema

pytestmark = pytest.mark.django_db


def listed(client) -> dict[str, dict]:
    """The API's post list items by slug."""
    return {item["slug"]: item for item in client.get("/api/v1/posts/", {"limit": 200}).json()["items"]}


def assert_matches_live_rows(client) -> None:
    """Every listed post shows what PostListOut makes of its bylines and tags as they are now."""
    from blog.schemas import PostListOut

    expected = {post.slug: through_schema(PostListOut, post) for post in Post.objects.published().with_listing_data()}
    assert listed(client) == expected


@pytest.fixture
def post(db):
    return PostFactory(title="Listed post", authors=[AuthorFactory(name="Ada Writer", handle="ada", slug="ada")],
                       tags=["compilers"])


def test_a_new_post_is_listed_with_its_byline_and_tags(client, post):
    item = listed(client)[post.slug]
    assert item["authors"] == [{"slug": "ada", "name": "Ada Writer", "handle": "ada"}]
    assert item["tags"] == ["compilers"]
    assert_matches_live_rows(client)


def test_renaming_an_author_changes_their_posts(client, post):
    author = post.ordered_authors()[0]
    author.name, author.handle, author.slug = "Ada Renamed", "", "ada-renamed"
    author.save()
    run_rerenders()  # the worker's part of the rename
    assert listed(client)[post.slug]["authors"] == [{"slug": "ada-renamed", "name": "Ada Renamed", "handle": ""}]
    assert_matches_live_rows(client)


def test_renaming_a_tag_changes_its_posts(client, post):
    tag = Tag.objects.get(name="compilers")
    tag.name = "toolchains"
    tag.save()
    run_rerenders()
    assert listed(client)[post.slug]["tags"] == ["toolchains"]
    assert_matches_live_rows(client)


def test_adding_removing_and_clearing_tags(client, post):
    post.tags.add("linkers", "Assemblers")
    assert listed(client)[post.slug]["tags"] == ["Assemblers", "compilers", "linkers"]
    post.tags.remove("compilers")
    assert listed(client)[post.slug]["tags"] == ["Assemblers", "linkers"]
    assert_matches_live_rows(client)
    post.tags.clear()
    assert listed(client)[post.slug]["tags"] == []


def test_adding_reordering_and_removing_bylines(client, post):
    second = PostAuthor.objects.create(post=post, author=AuthorFactory(name="Grace Second", slug="grace"), position=1)
    assert [a["slug"] for a in listed(client)[post.slug]["authors"]] == ["ada", "grace"]
    first = PostAuthor.objects.get(post=post, author__slug="ada")
    first.position = 2
    first.save()
    assert [a["slug"] for a in listed(client)[post.slug]["authors"]] == ["grace", "ada"]
    assert_matches_live_rows(client)
    PostAuthor.objects.filter(post=post, author__slug="ada").delete()
    assert [a["slug"] for a in listed(client)[post.slug]["authors"]] == ["grace"]
    PostAuthor.objects.filter(post=post).delete()
    assert listed(client)[post.slug]["authors"] == []


def test_saving_the_post_even_with_update_fields_keeps_them(client, post):
    post.tags.add("linkers")
    post.title = "Retitled"
    post.save(update_fields=["title"])
    item = listed(client)[post.slug]
    assert item["title"] == "Retitled" and item["tags"] == ["compilers", "linkers"]
    assert_matches_live_rows(client)


def test_a_byline_and_tags_written_through_the_api_are_listed(client, post, editor, make_token):
    from .conftest import bearer

    AuthorFactory(slug="grace", name="Grace")
    payload = {"title": "Via API", "slug": "via-api", "body": "Text.", "authors": [{"slug": "grace"}, {"slug": "ada"}],
               "tags": ["zeta", "alpha"]}
    response = client.post("/api/v1/posts/", payload, content_type="application/json",
                           **bearer(make_token(editor, "write:content")))
    assert response.status_code == 201, response.content
    stored = Post.objects.get(slug="via-api").authors_tags
    assert [a["slug"] for a in stored["authors"]] == ["grace", "ada"] and stored["tags"] == ["alpha", "zeta"]


def test_refresh_cards_missing_fills_posts_without_them_and_keeps_updated_at(post):
    Post.objects.filter(pk=post.pk).update(authors_tags={})
    updated_at = Post.objects.get(pk=post.pk).updated_at
    out = io.StringIO()
    call_command("refresh_cards", "--missing", stdout=out)
    refreshed = Post.objects.get(pk=post.pk)
    assert "1 post card rendered" in out.getvalue()
    assert refreshed.authors_tags == {"authors": [{"slug": "ada", "name": "Ada Writer", "handle": "ada"}],
                                      "tags": ["compilers"]}
    assert refreshed.updated_at == updated_at


def test_the_migration_fills_what_render_parts_would(post):
    other = PostFactory(authors=[AuthorFactory(), AuthorFactory()], tags=["b", "a"])
    bare = PostFactory(tags=[])
    PostAuthor.objects.filter(post=bare).delete()
    rendered = {p.pk: p.authors_tags for p in Post.objects.all()}
    Post.objects.update(authors_tags={})
    migration = importlib.import_module("blog.migrations.0007_post_authors_tags")
    migration.fill_authors_tags(apps, None)
    assert {p.pk: p.authors_tags for p in Post.objects.all()} == rendered
    assert rendered[bare.pk] == {"authors": [], "tags": []} and rendered[other.pk]["tags"] == ["a", "b"]


def test_a_published_post_cannot_lose_its_byline_through_the_api(client, post, publisher, make_token):
    """check_publishable: a post goes public with a byline "whatever the path" -- and stays so: a PUT with
    ``authors: []`` kept the post published with no author (found by `make bench`'s edge edits)."""
    from .conftest import bearer

    payload = {"title": post.title, "slug": post.slug, "body": post.body, "authors": [], "tags": ["compilers"]}
    response = client.put(f"/api/v1/posts/{post.slug}", payload, content_type="application/json",
                          **bearer(make_token(publisher, "write:content", "publish")))
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["field"] == "body.authors"
    assert list(post.post_authors.values_list("author__slug", flat=True)) == ["ada"]
