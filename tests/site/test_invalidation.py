"""The page cache is dropped only by writes that change what readers see (issue 19).

Every webhook and poll saves references, and editors save drafts all day: none of it
is public until a published digest cites it or the draft goes out, so none of it may
empty the page cache of a busy site.
"""
import pytest
from django.core.cache import cache
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from blog.models import PostAuthor
from digests.factories import DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory
from digests.models import Digest
from publishing.signals import announce_bulk_write
from publishing.workflow import Status
from reader.caching import VERSION_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def cached():
    """Mark the current version; `cached.kept()` says whether the write since left it alone."""

    class Marker:
        @staticmethod
        def set():
            cache.set(VERSION_KEY, "marker", None)

        @staticmethod
        def kept() -> bool:
            return cache.get(VERSION_KEY) == "marker"

    return Marker


def test_saving_a_draft_post_or_its_byline_keeps_the_cache(cached):
    post = PostFactory(status=Status.DRAFT)
    cached.set()
    post.title = "Still a draft"
    post.save()
    PostAuthor.objects.create(post=post, author=AuthorFactory(), position=5)
    post.tags.add("drafty")
    assert cached.kept()


def test_publishing_editing_and_unpublishing_a_post_drop_the_cache(cached):
    post = PostFactory(status=Status.DRAFT)
    for change in ("publish", "edit", "unpublish"):
        cached.set()
        if change == "publish":
            post.status = Status.PUBLISHED
        elif change == "edit":
            post.title = "Edited in public"
        else:
            post.status = Status.DRAFT
        post.save()
        assert not cached.kept(), change


def test_scheduling_a_post_drops_the_cache_its_time_decides_when_pages_change(cached):
    post = PostFactory(status=Status.DRAFT)
    cached.set()
    post.status, post.published_at = Status.PUBLISHED, timezone.now() + timezone.timedelta(hours=1)
    post.save()
    assert not cached.kept()


def test_a_published_posts_tags_and_bylines_drop_the_cache(cached):
    post = PostFactory(status=Status.PUBLISHED)
    cached.set()
    post.tags.add("public")
    assert not cached.kept()
    cached.set()
    PostAuthor.objects.create(post=post, author=AuthorFactory(), position=9)
    assert not cached.kept()


def test_a_draft_digest_and_its_children_keep_the_cache(cached):
    digest = DigestFactory(status=Status.DRAFT)
    cached.set()
    digest.headline = "Draft headline"
    digest.save()
    FAQEntryFactory(digest=digest, question="Q?", answer="A.")
    DigestReferenceFactory(digest=digest, number=1)
    Digest.objects.filter(pk=digest.pk).refresh_rendered()
    assert cached.kept()


def test_a_published_digests_faq_drops_the_cache(cached):
    digest = DigestFactory(status=Status.PUBLISHED)
    cached.set()
    FAQEntryFactory(digest=digest, question="Q?", answer="A.")
    assert not cached.kept()


def test_references_count_only_once_a_published_digest_cites_them(cached):
    cached.set()
    reference = ReferenceFactory(title="Fresh from a webhook")
    reference.title = "Edited by a webhook"
    reference.save()
    DigestReferenceFactory(digest=DigestFactory(status=Status.DRAFT), reference=reference, number=1)
    reference.save()
    assert cached.kept()
    DigestReferenceFactory(digest=DigestFactory(status=Status.PUBLISHED), reference=reference, number=1)
    cached.set()
    reference.title = "Edited while cited in public"
    reference.save()
    assert not cached.kept()


def test_bulk_writes_drop_the_cache_only_for_public_rows(cached):
    draft, published = DigestFactory(status=Status.DRAFT), DigestFactory(status=Status.PUBLISHED)
    cached.set()
    announce_bulk_write(Digest, [draft.pk])
    assert cached.kept()
    announce_bulk_write(Digest, Digest.objects.filter(pk=published.pk).values("pk"))
    assert not cached.kept()
    cached.set()
    announce_bulk_write(Digest)  # rows unknown: assume some were public
    assert not cached.kept()


def test_pages_say_whether_the_page_cache_served_them(client, settings):
    """``X-Page-Cache`` (what ``make bench`` counts to report the hit ratio under webhooks)."""
    settings.PAGE_CACHE_ENABLED = True
    PostFactory(status=Status.PUBLISHED)
    assert client.get("/posts/")["X-Page-Cache"] == "miss"
    assert client.get("/posts/")["X-Page-Cache"] == "hit"
    ReferenceFactory(title="A webhook's new pull request")  # cited by nothing: the page stays cached
    assert client.get("/posts/")["X-Page-Cache"] == "hit"
    settings.PAGE_CACHE_ENABLED = False
    assert client.get("/posts/")["X-Page-Cache"] == "off"
