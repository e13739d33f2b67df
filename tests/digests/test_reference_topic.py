"""``Reference.topic`` is its repository's topic on every path that stores a reference or moves one.

The newsroom counts a topic's new references by this column (migration digests 0021), so each test
writes one way or another -- model saves, ``bulk_create``, the importers' upserts, ``update()``, raw
SQL, a repository moved or left without a topic, a stale save, two transactions at once on
PostgreSQL -- and compares the column with the rule it stands for: the repository's topic now.
"""
import pytest
from django.db import connection
from django.utils import timezone

from digests.factories import ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Reference, Repository

from .test_first_published import _race, postgresql_only

pytestmark = pytest.mark.django_db


def stored_topic(reference: Reference):
    return Reference.objects.values_list("topic_id", flat=True).get(pk=reference.pk)


def topics_disagree() -> list[int]:
    """References whose column is not their repository's topic (the rule; empty when kept)."""
    return [pk for pk, kept, rule in Reference.objects.values_list("pk", "topic_id", "repository__topic_id")
            if kept != rule]


def test_a_stored_reference_takes_its_repositorys_topic_whoever_writes_it():
    topic = TopicFactory()
    repository = RepositoryFactory(topic=topic)
    saved = ReferenceFactory(repository=repository)
    bulk = Reference.objects.bulk_create([Reference(repository=repository, kind="commit", key=f"b{n}", title="t")
                                          for n in range(3)])
    Reference.objects.upsert_many(repository, "pull_request", {"7": {"title": "upserted"}})
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO digests_reference (repository_id, kind, key, sha, title, url, author_login, co_authors, "
            "state, labels, stats, body, body_html, created_at, updated_at) VALUES "
            "(%s, 'commit', 'raw', '', 'raw', '', '', '[]', '', '[]', '{}', '', '', %s, %s)",
            [repository.pk, timezone.now(), timezone.now()])
    assert Reference.objects.filter(repository=repository).count() == 6
    assert set(Reference.objects.filter(repository=repository).values_list("topic_id", flat=True)) == {topic.pk}
    assert stored_topic(saved) == stored_topic(bulk[0]) == topic.pk
    assert Reference.objects.filter(topic=topic).count() == 6
    assert topics_disagree() == []


def test_a_value_written_over_it_is_replaced_and_a_moved_reference_follows_its_new_repository():
    first, second = TopicFactory(), TopicFactory()
    reference = ReferenceFactory(repository=RepositoryFactory(topic=first))
    assert reference.topic_id is None  # the instance in memory: the database set the column
    reference.title = "edited"
    reference.save()  # writes the stale None back
    assert stored_topic(reference) == first.pk
    Reference.objects.filter(pk=reference.pk).update(topic=second)
    assert stored_topic(reference) == first.pk
    Reference.objects.filter(pk=reference.pk).update(repository=RepositoryFactory(topic=second))
    assert stored_topic(reference) == second.pk
    assert topics_disagree() == []


def test_a_repository_moved_to_another_topic_or_left_without_one_carries_its_references():
    first, second = TopicFactory(), TopicFactory()
    repository = RepositoryFactory(topic=first)
    references = ReferenceFactory.create_batch(3, repository=repository)
    untouched = ReferenceFactory(repository=RepositoryFactory(topic=first))
    repository.topic = second
    repository.save()
    assert {stored_topic(reference) for reference in references} == {second.pk}
    assert stored_topic(untouched) == first.pk
    Repository.objects.filter(pk=repository.pk).update(topic=None)
    assert {stored_topic(reference) for reference in references} == {None}
    first.delete()  # Django sets the repositories' topic NULL with an UPDATE: the triggers follow
    assert stored_topic(untouched) is None
    assert topics_disagree() == []


@postgresql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store_first", [False, True], ids=["moved-then-stored", "stored-then-moved"])
def test_a_reference_stored_while_its_repository_moves_ends_in_the_new_topic(store_first):
    """The insert reads the repository FOR SHARE: stored during a move, it waits for the move and reads the
    new topic; moved during an insert, the move waits for the insert and then updates the committed row."""
    first, second = TopicFactory(), TopicFactory()
    repository = RepositoryFactory(topic=first)

    def move():
        Repository.objects.filter(pk=repository.pk).update(topic=second)

    def store():
        ReferenceFactory(repository=repository)

    blocked = _race(store, move) if store_first else _race(move, store)
    assert blocked
    assert topics_disagree() == [] and Reference.objects.get(repository=repository).topic_id == second.pk
