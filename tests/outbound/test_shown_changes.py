"""``*.updated`` for writes that change what a published item shows without saving the item (issue 28).

A renamed author, a post's new tag, a cited reference's new title, a repository's new name, a
digest's new citation: each changes the API's JSON of published items, so subscribers hear of
it once per item and transaction, and the edge purges those items' pages.
"""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import DigestRerender, Topic
from digests.tasks import rerender
from edge.models import Purge
from outbound.models import Announcement, Message
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def edge(settings, monkeypatch):
    """Writes record purges (as wherever an edge or a shared broker is configured); none is sent."""
    settings.EDGE_RECORD_PURGES = True
    monkeypatch.setattr("edge.outbox.queue", lambda pk: None)


def messages(subject_type: str = "") -> list[tuple[str, int]]:
    rows = Message.objects.order_by("pk")
    if subject_type:
        rows = rows.filter(subject_type=subject_type)
    return list(rows.values_list("type", "subject_id"))


def purged_keys() -> set[str]:
    return {key for purge in Purge.objects.all() for key in purge.keys}


def test_renaming_an_author_updates_their_published_posts_only(endpoint, queued, edge,
                                                              django_capture_on_commit_callbacks):
    ada = AuthorFactory(name="Ada", handle="ada")
    with django_capture_on_commit_callbacks(execute=True):
        public = PostFactory(authors=[ada])
        draft = PostFactory(authors=[ada], status=Status.DRAFT, published_at=None)
    Purge.objects.all().delete()
    before = len(messages())
    with django_capture_on_commit_callbacks(execute=True):
        ada.name, ada.handle = "Ada Lovelace", "lovelace"
        ada.save()
    assert messages()[before:] == [("post.updated", public.pk)]
    authors = Message.objects.order_by("pk").last().payload["data"]["authors"]
    assert [(a["name"], a["handle"]) for a in authors] == [("Ada Lovelace", "lovelace")]
    assert f"post-{public.pk}" in purged_keys() and f"post-{draft.pk}" not in purged_keys()
    with django_capture_on_commit_callbacks(execute=True):
        ada.save()  # nothing the API shows changed
    assert len(messages()) == before + 1


def test_tagging_a_published_post_updates_it(endpoint, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(tags=["python"])
    with django_capture_on_commit_callbacks(execute=True):
        post.tags.add("rust")
    assert messages()[-1] == ("post.updated", post.pk)
    assert set(Message.objects.order_by("pk").last().payload["data"]["tags"]) == {"python", "rust"}


def test_a_cited_reference_retitled_updates_the_published_digests_citing_it(
        endpoint, queued, edge, django_capture_on_commit_callbacks):
    reference = ReferenceFactory(title="Fix the allocator")
    with django_capture_on_commit_callbacks(execute=True):
        public = DigestReferenceFactory(reference=reference).digest
        draft = DigestReferenceFactory(reference=reference, digest=DigestFactory(status=Status.DRAFT)).digest
    Purge.objects.all().delete()
    before = len(messages())
    with django_capture_on_commit_callbacks(execute=True):
        reference.title = "Fix the caching allocator"
        reference.save()
    assert messages()[before:] == [("digest.updated", public.pk)]
    cited = Message.objects.order_by("pk").last().payload["data"]["references"]
    assert any("caching allocator" in str(citation) for citation in cited)
    assert f"digest-{public.pk}" in purged_keys() and f"digest-{draft.pk}" not in purged_keys()


def test_a_renamed_repository_updates_the_digests_citing_it(endpoint, queued, edge,
                                                           django_capture_on_commit_callbacks):
    repository = RepositoryFactory(full_name="pytorch/old-name")
    with django_capture_on_commit_callbacks(execute=True):
        digest = DigestReferenceFactory(reference=ReferenceFactory(repository=repository)).digest
    Purge.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        repository.full_name = "pytorch/new-name"
        repository.save()
    with django_capture_on_commit_callbacks(execute=True):
        for owed in DigestRerender.objects.values_list("pk", flat=True):  # the re-render worker (none reads
            rerender(owed)                                               # the suite's queue with REDIS_URL)
    assert messages("digest")[-1] == ("digest.updated", digest.pk)
    assert messages("digest").count(("digest.updated", digest.pk)) == 1  # the re-render changed no more JSON
    assert "pytorch/new-name" in str(Message.objects.order_by("pk").last().payload["data"]["references"])
    assert f"digest-{digest.pk}" in purged_keys()


def test_many_citations_in_one_transaction_are_one_update_compared_once(
        endpoint, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        digest = DigestFactory()
    before = len(messages())

    def add_citations(count: int) -> int:
        """Queries run at the commit by what the citations queued (the announcement included)."""
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            for _ in range(count):
                DigestReferenceFactory(digest=digest)
        with CaptureQueriesContext(connection) as queries:
            for callback in callbacks:
                callback()
        return len(queries)

    few, many = add_citations(2), add_citations(12)
    assert messages()[before:] == [("digest.updated", digest.pk)] * 2
    assert len(Message.objects.order_by("pk").last().payload["data"]["references"]) == 14
    assert many == few  # one comparison per digest and transaction, however many citations


def test_without_endpoints_such_writes_make_no_messages(queued, django_capture_on_commit_callbacks):
    ada = AuthorFactory(name="Ada")
    with django_capture_on_commit_callbacks(execute=True):
        PostFactory(authors=[ada])
        ada.name = "Ada Lovelace"
        ada.save()
        DigestReferenceFactory()
    assert not Message.objects.exists() and queued == []


def test_a_post_saved_with_its_byline_and_tags_is_compared_once(endpoint, queued, monkeypatch,
                                                               django_capture_on_commit_callbacks):
    from outbound import announcing

    compared = []
    real = announcing.current_json
    monkeypatch.setattr(announcing, "current_json", lambda subject, pk: compared.append(pk) or real(subject, pk))
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(authors=[AuthorFactory(), AuthorFactory()], tags=["python", "rust", "cuda"])
    assert messages() == [("post.published", post.pk)]
    assert compared == [post.pk]  # the post's save, two bylines and three tags: one comparison at the commit


def test_an_author_edit_posts_do_not_show_records_nothing(endpoint, queued, django_capture_on_commit_callbacks):
    """Posts show an author's name, handle and slug: editing the bio of an author with 2,000 posts
    recorded 2,000 announcements for nothing."""
    ada = AuthorFactory(name="Ada", handle="ada")
    with django_capture_on_commit_callbacks(execute=True):
        PostFactory(authors=[ada])
    Announcement.objects.all().delete()
    ada.bio = "Wrote the first program."
    ada.save()
    assert not Announcement.objects.exists()
    ada.name = "Ada Lovelace"
    ada.save()
    assert Announcement.objects.filter(subject_type="post").count() == 1


def test_a_topic_save_reads_what_digests_show_of_it_once(endpoint, queued, django_capture_on_commit_callbacks):
    """One snapshot before the save (``digests.signals``) serves the re-render and the announcement."""
    topic = TopicFactory(name="Compilers")
    with django_capture_on_commit_callbacks(execute=True):
        DigestFactory(topic=topic)
    Announcement.objects.all().delete()
    table = connection.ops.quote_name(Topic._meta.db_table)
    with CaptureQueriesContext(connection) as queries:
        topic.name = "Compilers and linkers"
        topic.save()
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(f"SELECT {table}.")]
    assert len(reads) == 1, reads
    assert Announcement.objects.filter(subject_type="digest").count() == 1
