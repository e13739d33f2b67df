"""Stored post cards stay true: every change to what a card shows re-renders it (blog/cards.py)."""
import io

import pytest
from django.core.management import call_command
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostAuthor
from tests.rerenders import run_rerenders

from .helpers import visible_text


def listing() -> str:
    from django.test import Client

    return visible_text(Client().get("/posts/").content.decode())


@pytest.fixture
def post(db):
    return PostFactory(title="Carded post", excerpt="The carded excerpt.",
                       authors=[AuthorFactory(name="Ada Writer", handle="ada")], tags=["compilers"])


@pytest.mark.django_db
def test_a_new_post_card_shows_byline_tags_and_excerpt(post):
    text = listing()
    assert "Ada Writer (@ada)" in text and "compilers" in text and "The carded excerpt." in text


@pytest.mark.django_db
def test_renaming_an_author_re_renders_their_cards(post):
    author = post.ordered_authors()[0]
    author.name, author.handle = "Ada Renamed", ""
    author.save()
    run_rerenders()  # the worker's part of the rename
    text = listing()
    assert "Ada Renamed" in text and "Ada Writer" not in text and "@ada" not in text


@pytest.mark.django_db
def test_renaming_a_tag_re_renders_its_cards(post):
    tag = Tag.objects.get(name="compilers")
    tag.name = "toolchains"
    tag.save()
    run_rerenders()
    assert "toolchains" in listing()


@pytest.mark.django_db
def test_adding_and_removing_tags_and_bylines_re_render_the_card(post):
    post.tags.add("linkers")
    assert "linkers" in listing()
    post.tags.remove("compilers")
    assert "compilers" not in listing()
    PostAuthor.objects.create(post=post, author=AuthorFactory(name="Grace Second"), position=1)
    assert "Ada Writer (@ada), Grace Second" in listing()
    PostAuthor.objects.filter(post=post, author__name="Ada Writer").delete()
    assert "Ada Writer" not in listing()
    post.tags.clear()
    assert "linkers" not in listing()


@pytest.mark.django_db
def test_editing_the_post_re_renders_the_card_even_with_update_fields(post):
    post.excerpt = "A new excerpt."
    post.save(update_fields=["excerpt"])
    text = listing()
    assert "A new excerpt." in text and "The carded excerpt." not in text


@pytest.mark.django_db
def test_the_automatic_excerpt_and_word_count_come_from_the_body(db):
    post = PostFactory(excerpt="", body="First words of a *long* body. " * 40)
    post.refresh_from_db()
    assert post.auto_excerpt.startswith("First words of a long body.") and post.auto_excerpt.endswith("…")
    assert post.word_count == 240 and post.reading_time == 1
    assert "First words of a long body." in listing()


@pytest.mark.django_db
def test_refresh_cards_renders_missing_cards_without_touching_updated_at(post):
    Post.objects.filter(pk=post.pk).update(card_html="", auto_excerpt="", word_count=0)
    updated_at = Post.objects.get(pk=post.pk).updated_at
    out = io.StringIO()
    call_command("refresh_cards", "--missing", stdout=out)
    refreshed = Post.objects.get(pk=post.pk)
    assert "1 post card rendered" in out.getvalue()
    assert "Ada Writer" in refreshed.card_html and refreshed.word_count > 0
    assert refreshed.updated_at == updated_at
    call_command("refresh_cards", "--missing", stdout=out)
    assert "0 post cards rendered" in out.getvalue()


@pytest.mark.django_db
def test_hostile_author_and_tag_names_are_escaped_in_the_stored_card(db):
    PostFactory(authors=[AuthorFactory(name="<script>alert(1)</script>")], tags=["<img src=x onerror=alert(1)>"])
    card = Post.objects.get().card_html
    assert "<script>" not in card and "<img" not in card and "&lt;script&gt;" in card


@pytest.mark.django_db
def test_the_post_page_header_and_json_ld_follow_renames_and_tags(client, post):
    import json
    import re

    author = post.ordered_authors()[0]
    author.name = "Ada Renamed"
    author.save()
    post.tags.add("linkers")
    page = client.get(post.get_absolute_url()).content.decode()
    header = page[page.index('<header class="article-header">'):page.index("</header>", page.index("article-header"))]
    assert "Ada Renamed" in header and "linkers" in header and "Ada Writer" not in page
    posting = next(data for data in map(json.loads, re.findall(r'<script type="application/ld\+json">(.*?)</script>', page))
                   if data["@type"] == "BlogPosting")
    assert [person["name"] for person in posting["author"]] == ["Ada Renamed"]
    assert sorted(posting["keywords"]) == ["compilers", "linkers"]
    assert posting["dateModified"] == Post.objects.get(pk=post.pk).updated_at.isoformat()


@pytest.mark.django_db
def test_related_posts_come_from_each_tags_newest_posts_in_one_query(client, monkeypatch):
    """On PostgreSQL only each tag's newest RELATED_CANDIDATES posts compete (a LATERAL join)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from blog import models as blog_models

    old_match = PostFactory(title="Old post sharing both", tags=["alpha", "beta"])
    newer = [PostFactory(title=f"Newer alpha {n}", tags=["alpha"]) for n in range(2)]
    post = PostFactory(title="The post", tags=["alpha", "beta"])
    PostFactory(title="Newest beta", tags=["beta"])
    monkeypatch.setattr(blog_models, "RELATED_CANDIDATES", 1)
    with CaptureQueriesContext(connection) as queries:
        related = [p.pk for p in Post.objects.related_cards(post, 3)]
    assert len(queries) == 1
    if connection.vendor == "postgresql":
        assert old_match.pk not in related  # neither alpha's nor beta's newest (besides the post itself)
        assert set(related) <= {newer[1].pk, Post.objects.get(title="Newest beta").pk}
    else:
        assert related[0] == old_match.pk  # every post sharing a tag competes; two shared tags rank first


@pytest.mark.django_db
def test_related_cards_rank_published_posts_by_shared_tags():
    """related_cards: only published, already-live posts; most shared tags first, then newest; the card comes along."""
    import datetime

    from django.utils import timezone

    from publishing.workflow import Status

    post = PostFactory(title="The post", tags=["alpha", "beta", "gamma"])
    one = PostFactory(title="Shares one", tags=["alpha"])
    two = PostFactory(title="Shares two", tags=["alpha", "beta"])
    newer_one = PostFactory(title="Newer, shares one", tags=["gamma"])
    PostFactory(title="Draft", tags=["alpha", "beta", "gamma"], status=Status.DRAFT)
    PostFactory(title="Scheduled", tags=["alpha", "beta"], published_at=timezone.now() + datetime.timedelta(days=1))
    PostFactory(title="Unrelated", tags=["delta"])
    Post.objects.filter(pk=newer_one.pk).update(published_at=timezone.now())

    related = Post.objects.related_cards(post, 3)

    assert [p.pk for p in related] == [two.pk, newer_one.pk, one.pk]
    assert "Shares two" in related[0].card_html
    assert [p.pk for p in Post.objects.related_cards(post, 1)] == [two.pk]
