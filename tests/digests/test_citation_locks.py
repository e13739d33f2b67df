"""Two editors changing the citations of two published digests that share references do not deadlock.

Citing or un-citing a reference from a published digest updates the reference's
``first_published_at`` (the triggers of migration 0014), which locks the
reference's row until the transaction ends. Two transactions that each wrote
their digest's citations one row at a time, in their own order -- one citing A
then B, the other B then A -- each held the row the other needed next, and
PostgreSQL killed one of them after ``deadlock_timeout``: its editor lost the
edit. Each test runs the real write path in two threads with their own
connections and makes them meet after their first citation, the interleaving
that deadlocked; both writes must succeed, and the column must still equal its
rule. With the fix (``Digest.lock_cited_references``, every reference a write
touches locked in id order before the first is written) the second writer waits
at that lock instead, and the meeting times out on the first writer's side.
"""
import datetime
import threading

import pytest
from django.db import connection, connections, transaction
from django.db.models.signals import post_save
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, DigestReference, Reference
from publishing.workflow import Status

from ..api.conftest import bearer

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="row locks between concurrent writers are PostgreSQL's; SQLite has one writer at a time "
               "(CI's PostgreSQL pass runs these)",
    ),
    pytest.mark.django_db(transaction=True),
]

#: How long a writer that has written its first citation waits for the other to do the same.
MEETING = 3


class Meeting:
    """Each named thread, after saving its first citation, waits (at most MEETING seconds) until the
    other named thread has saved its own: the interleaving in which both hold one reference each."""

    def __init__(self, *names: str):
        self.arrived = {name: threading.Event() for name in names}

    def __call__(self, sender, instance, created=False, **kwargs):
        name = threading.current_thread().name
        if not created or name not in self.arrived or self.arrived[name].is_set():
            return
        self.arrived[name].set()
        other = next(event for other, event in self.arrived.items() if other != name)
        other.wait(MEETING)


def run_together(writes: dict) -> dict:
    """Run each named write in a thread of its own, meeting after the first citation; their results."""
    meeting, results = Meeting(*writes), {}
    post_save.connect(meeting, sender=DigestReference, weak=False, dispatch_uid="test-citation-meeting")

    def run(name, write):
        try:
            results[name] = write()
        except Exception as error:  # noqa: BLE001 -- reported by the test
            results[name] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=item, name=item[0]) for item in writes.items()]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        post_save.disconnect(sender=DigestReference, dispatch_uid="test-citation-meeting")
    assert all(name in results for name in writes), "a writer did not finish"
    assert all(event.is_set() for event in meeting.arrived.values()), results
    return results


def earliest_publication(reference: Reference):
    """The rule ``first_published_at`` keeps: the earliest publication among the published digests citing it."""
    return min((citation.digest.published_at for citation in reference.citations.select_related("digest")
                if citation.digest.status == Status.PUBLISHED), default=None)


@pytest.fixture
def shared():
    """Two published digests of one topic and two references both will cite, in opposite orders."""
    topic = TopicFactory(slug="pytorch", name="PyTorch")
    repository = RepositoryFactory(full_name="pytorch/torchtitan", topic=topic)
    now = timezone.now()
    first = DigestFactory(topic=topic, date=now.date().replace(day=1), slug="pytorch-first",
                          status=Status.PUBLISHED, published_at=now - datetime.timedelta(hours=5),
                          summary="Two changes [1] [2].", body="")
    second = DigestFactory(topic=topic, date=now.date().replace(day=2), slug="pytorch-second",
                           status=Status.PUBLISHED, published_at=now - datetime.timedelta(hours=1),
                           summary="Two changes [1] [2].", body="")
    a, b = (ReferenceFactory(repository=repository, kind="pull_request", key=str(n), number=n, title=f"PR {n}")
            for n in (101, 102))
    return first, second, a, b


def assert_kept(first: Digest, second: Digest, a: Reference, b: Reference) -> None:
    first.refresh_from_db()  # the admin's form posts its publication time to the second
    for digest in (first, second):
        assert set(digest.digest_references.values_list("reference", flat=True)) == {a.pk, b.pk}
    for reference in (a, b):
        reference.refresh_from_db()
        assert reference.first_published_at == earliest_publication(reference) == first.published_at


def test_two_publishers_replacing_citations_through_the_api_in_opposite_orders(shared, publisher):
    first, second, a, b = shared
    token = ApiToken.issue(publisher, "test token", ["write:content", "read:drafts"])[1]

    def put(digest: Digest, order: list[Reference]):
        detail = Client().get(f"/api/v1/digests/{digest.slug}", **bearer(token)).json()
        payload = {
            name: detail[name] for name in ("topic", "date", "headline", "summary", "body", "slug", "action_items")
        }
        payload["topic"] = {"slug": detail["topic"]["slug"]}
        payload["references"] = [
            {"number": n, "reference": {"repository": "pytorch/torchtitan", "kind": "pull_request",
                                        "key": reference.key, "title": reference.title, "number": reference.number}}
            for n, reference in enumerate(order, start=1)
        ]
        response = Client().put(f"/api/v1/digests/{digest.slug}", payload, content_type="application/json",
                                **bearer(token))
        return response.status_code, response.content[:300]

    results = run_together({"first": lambda: put(first, [a, b]), "second": lambda: put(second, [b, a])})
    assert results["first"][0] == results["second"][0] == 200, results
    assert_kept(first, second, a, b)


def test_two_publishers_adding_citations_in_the_admin_in_opposite_orders(shared, publisher, admin_form_data):
    first, second, a, b = shared

    def change(digest: Digest, order: list[Reference]):
        """The change form's POST adding `order` as new citation rows; built before the threads start
        (the test client's captured template contexts are global, so two threads would mix them)."""
        client = Client()
        client.force_login(publisher)
        url = f"/admin/digests/digest/{digest.pk}/change/"
        data = admin_form_data(client.get(url))
        prefix = "digest_references"
        assert data[f"{prefix}-TOTAL_FORMS"] == "1"  # the one blank row (extra = 1)
        data[f"{prefix}-TOTAL_FORMS"] = str(len(order))
        for index, reference in enumerate(order):
            data[f"{prefix}-{index}-reference"] = str(reference.pk)
            data[f"{prefix}-{index}-number"] = str(index + 1)
            data[f"{prefix}-{index}-digest"] = str(digest.pk)
        return lambda: client.post(url, data).status_code

    results = run_together({"first": change(first, [a, b]), "second": change(second, [b, a])})
    assert results["first"] == results["second"] == 302, results
    assert_kept(first, second, a, b)


def test_a_citation_of_a_draft_locks_no_reference(shared):
    """Drafting stays free: only citations of published digests take the references' locks."""
    first, second, a, b = shared
    draft = DigestFactory(topic=first.topic, status=Status.DRAFT, published_at=None)
    DigestReferenceFactory(digest=first, reference=a, number=1)
    with transaction.atomic():
        assert draft.lock_cited_references([a, b]) == []
        assert first.lock_cited_references([b]) == sorted([a.pk, b.pk])
