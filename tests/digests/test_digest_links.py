"""``DigestRepository``'s copy of its digest's status, date and time, and ``newest_citing`` that reads it.

The copy only orders and narrows a repository's digests; what it must give is
what ``Digest.objects.published().citing(repository)`` gives, in the listing's
order (date, publication time, id: newest first).
"""
import datetime
import random

import pytest
from django.utils import timezone

from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, DigestRepository
from publishing.workflow import Status

from .test_first_published import _race, postgresql_only

HOUR = datetime.timedelta(hours=1)


def copies(digest: Digest) -> set[tuple]:
    return set(DigestRepository.objects.filter(digest=digest).values_list("digest_status", "digest_date",
                                                                          "digest_published_at"))


def expected(repository, now) -> list[int]:
    return list(Digest.objects.published(now).citing(repository).values_list("pk", flat=True)[:20])


@pytest.mark.django_db
def test_links_copy_their_digest_on_insert_and_on_every_change():
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    DigestReferenceFactory(digest=digest, reference=ReferenceFactory())  # the digest's links are rewritten
    assert copies(digest) == {(Status.DRAFT, digest.date, None)}

    digest.status, digest.published_at = Status.PUBLISHED, timezone.now() - HOUR
    digest.save()
    assert copies(digest) == {(Status.PUBLISHED, digest.date, digest.published_at)}

    moved = digest.date + datetime.timedelta(days=3)
    Digest.objects.filter(pk=digest.pk).update(date=moved, status=Status.ARCHIVED)  # no signals, no re-render
    assert copies(digest) == {(Status.ARCHIVED, moved, digest.published_at)}


@pytest.mark.django_db
def test_newest_citing_gives_what_citing_gives_in_listing_order_through_random_changes():
    rng = random.Random(15)
    now = timezone.now()
    repository, other = RepositoryFactory(), RepositoryFactory()
    topics = [TopicFactory(), TopicFactory(), TopicFactory()]
    digests = []
    for n in range(30):
        digest = DigestFactory(topic=topics[n % 3], date=datetime.date(2026, 3, 1) + datetime.timedelta(days=n // 3),
                               published_at=now - rng.randrange(1, 5) * HOUR)
        DigestReferenceFactory(digest=digest, reference=ReferenceFactory(repository=rng.choice([repository, other])))
        digests.append(digest)
    for step in range(40):
        digest = rng.choice(digests)
        digest.status = rng.choice([Status.PUBLISHED, Status.PUBLISHED, Status.DRAFT, Status.ARCHIVED])
        digest.published_at = now + rng.choice([-1, -1, -1, 1]) * rng.randrange(1, 48) * HOUR
        digest.save()
        for each in (repository, other):
            newest = list(Digest.objects.newest_citing(each.pk, now).values_list("pk", flat=True)[:20])
            assert newest == expected(each, now), f"step {step}"
    assert len(expected(repository, now)) > 5  # the walk left something to list


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_link_written_while_its_digest_is_published_copies_the_published_state():
    repository = RepositoryFactory()
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    at = timezone.now() - HOUR

    def publish():
        Digest.objects.filter(pk=digest.pk).update(status=Status.PUBLISHED, published_at=at)

    blocked = _race(lambda: DigestRepository.objects.create(digest=digest, repository=repository), publish)
    assert blocked
    assert copies(digest) == {(Status.PUBLISHED, digest.date, at)}
    assert expected(repository, timezone.now()) == [digest.pk]
