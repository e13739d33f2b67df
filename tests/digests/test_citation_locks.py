"""Writers of digests, their citations and the references they cite do not deadlock one another.

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

Two more pairs deadlocked until the lock order was one everywhere -- a digest's
row, then its references in id order, all before the first is written -- and meet
after a statement instead: two Publishers each publishing a digest and citing the
other's reference in the same admin save (publishing locks a digest's references
in its own ``UPDATE``), and ingestion retitling a cited pull request (its row, then
the digests citing it, re-rendered) against a save of a digest citing it. Each
also asserts that no write lost a lock conflict: the retry (``publishing.locks``)
would otherwise hide a deadlock behind a second attempt.
"""
import datetime
import json
import logging
import threading

import pytest
from django.db import connection, connections, transaction
from django.db.models.signals import post_save
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, DigestReference, Reference
from ingestion.deliveries import process_delivery
from ingestion.models import TrackedRepository, WebhookDelivery
from publishing.workflow import Status

from ..api.conftest import bearer
from ..ingestion.conftest import HELLO_WORLD, fixture_payload

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
    """Each named thread, at its meeting point, waits (at most MEETING seconds) until the other named
    thread has reached its own: the interleaving in which each holds what the other needs next.

    The meeting point is the first citation saved (as a post_save receiver), or with ``after``, the
    first statement of the thread's own that starts so (an execute wrapper on its connection)."""

    def __init__(self, *names: str):
        self.arrived = {name: threading.Event() for name in names}

    def arrive(self) -> None:
        name = threading.current_thread().name
        if name not in self.arrived or self.arrived[name].is_set():
            return
        self.arrived[name].set()
        other = next(event for other, event in self.arrived.items() if other != name)
        other.wait(MEETING)

    def __call__(self, sender, instance, created=False, **kwargs):
        if created:
            self.arrive()

    def after(self, statement: str):
        """An execute wrapper arriving here once a statement starting with `statement` has run."""

        def wrapper(execute, sql, params, many, context):
            result = execute(sql, params, many, context)
            if sql.lstrip().startswith(statement):
                self.arrive()
            return result

        return wrapper


def run_together(writes: dict, after: dict | None = None) -> dict:
    """Run each named write in a thread of its own, meeting after the first citation (or, with `after`,
    after the first statement starting as `after[name]`); their results, or what they raised."""
    meeting, results = Meeting(*writes), {}
    if after is None:
        post_save.connect(meeting, sender=DigestReference, weak=False, dispatch_uid="test-citation-meeting")

    def run(name, write):
        try:
            if after is None:
                results[name] = write()
            else:
                with connection.execute_wrapper(meeting.after(after[name])):
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


@pytest.fixture
def lost_locks(caplog):
    """What the writes logged of the lock conflicts they lost and were tried again for (``publishing.locks``)."""
    caplog.set_level(logging.WARNING, logger="publishing.locks")
    return lambda: [record.getMessage() for record in caplog.records if record.name == "publishing.locks"]


def change_form(user, digest: Digest, admin_form_data, **changes):
    """A client signed in as `user` and the change form's POST data for `digest` with `changes`; built
    before the threads start (the test client's captured template contexts are global)."""
    client = Client()
    client.force_login(user)
    url = f"/admin/digests/digest/{digest.pk}/change/"
    return client, url, admin_form_data(client.get(url), **changes)


def test_two_publishers_publishing_and_citing_each_other_s_reference_in_one_admin_save(
        shared, publisher, make_staff_user, admin_form_data, lost_locks):
    """Each digest, in review, cites one reference; each Publisher publishes one and cites the other's.

    Publishing locks the digest's references in its own ``UPDATE`` (migration 0014's trigger): each
    held its old reference there, then ``save_related`` asked for both and each waited for the
    other's. Now ``save_model`` locks the digest's row and every reference of the save, in id order,
    before that ``UPDATE``; the second Publisher waits there.
    """
    first, second, a, b = shared
    Digest.objects.filter(pk__in=[first.pk, second.pk]).update(status=Status.IN_REVIEW, published_at=None)
    DigestReferenceFactory(digest=first, reference=b, number=2)
    DigestReferenceFactory(digest=second, reference=a, number=1)
    other = make_staff_user("publisher2", "Publishers")

    def publish_citing(user, digest: Digest, reference: Reference, number: int):
        prefix = "digest_references"
        client, url, data = change_form(user, digest, admin_form_data, status=Status.PUBLISHED)
        assert data[f"{prefix}-TOTAL_FORMS"] == "2" and data[f"{prefix}-INITIAL_FORMS"] == "1"
        data.update({f"{prefix}-1-reference": str(reference.pk), f"{prefix}-1-number": str(number),
                     f"{prefix}-1-digest": str(digest.pk)})
        return lambda: client.post(url, data).status_code

    update = 'UPDATE "digests_digest"'  # each holds its digest and its old reference, as it publishes
    results = run_together({"first": publish_citing(publisher, first, a, 1),
                            "second": publish_citing(other, second, b, 2)}, after={"first": update, "second": update})
    assert results == {"first": 302, "second": 302}, results
    assert lost_locks() == []
    for digest in (first, second):
        digest.refresh_from_db()
        assert digest.status == Status.PUBLISHED
        assert set(digest.digest_references.values_list("reference", flat=True)) == {a.pk, b.pk}
    for reference in (a, b):
        reference.refresh_from_db()
        assert reference.first_published_at == earliest_publication(reference) is not None


@pytest.fixture
def cited_pull_request(shared):
    """The Hello-World pull request #2, tracked, cited as [1] by the first digest; and a delivery retitling it."""
    first, second, a, b = shared
    repository = RepositoryFactory(full_name=HELLO_WORLD, topic=first.topic)
    TrackedRepository.objects.create(repository=repository)
    payload = fixture_payload("pull_request.opened")
    reference = ReferenceFactory(repository=repository, kind="pull_request", key="2", number=2,
                                 title=payload["pull_request"]["title"], state="open", merged_at=None)
    DigestReferenceFactory(digest=first, reference=reference, number=1)
    Digest.objects.filter(pk=first.pk).update(summary="One change [1].")
    payload["action"] = "edited"
    payload["pull_request"].update(title="Retitled on GitHub", updated_at="2019-05-16T10:00:00Z")
    delivery = WebhookDelivery.objects.create(guid="retitled", event="pull_request", body=json.dumps(payload).encode(),
                                              repository_full_name=HELLO_WORLD)
    return first, reference, delivery


def retitle_against(save, delivery: WebhookDelivery) -> dict:
    """Ingestion's real path (the task's ``process_delivery``) against `save`, each meeting after it
    wrote its first row of the other's order: the reference's, and the digest's."""
    return run_together({"ingestion": lambda: process_delivery(delivery.pk).state, "editor": save},
                        after={"ingestion": 'UPDATE "digests_reference"', "editor": 'UPDATE "digests_digest"'})


def assert_retitled(digest: Digest, reference: Reference, delivery: WebhookDelivery) -> None:
    delivery.refresh_from_db()
    assert delivery.state == WebhookDelivery.State.PROCESSED, delivery.detail
    reference.refresh_from_db()
    assert reference.title == "Retitled on GitHub"
    digest.refresh_from_db()
    assert "Retitled on GitHub" in digest.page_html  # re-rendered after both commits, with the new title


def test_ingestion_retitling_a_cited_reference_against_a_publisher_saving_the_digest(
        cited_pull_request, publisher, admin_form_data, lost_locks):
    """Ingestion wrote the reference, then re-rendered the digests citing it; a Publisher's save of one
    wrote the digest, then locked its references: the opposite order. Now saving a reference locks the
    digests citing it first (``Reference.lock_citing_digests``)."""
    digest, reference, delivery = cited_pull_request
    client, url, data = change_form(publisher, digest, admin_form_data, headline="Rewritten while ingesting")
    results = retitle_against(lambda: client.post(url, data).status_code, delivery)
    assert results == {"ingestion": WebhookDelivery.State.PROCESSED, "editor": 302}, results
    assert lost_locks() == []
    assert_retitled(digest, reference, delivery)
    assert digest.headline == "Rewritten while ingesting"


def test_ingestion_retitling_a_cited_reference_against_an_editor_renumbering_its_citation_in_a_draft(
        cited_pull_request, editor, admin_form_data, lost_locks):
    """A draft locks no reference by itself, but a changed citation does: the search's copy of it reads
    the reference ``FOR SHARE`` (publishing/search_migrations.py), after the Editor's save wrote the digest."""
    digest, reference, delivery = cited_pull_request
    Digest.objects.filter(pk=digest.pk).update(status=Status.DRAFT, published_at=None)
    client, url, data = change_form(editor, digest, admin_form_data, summary="One change [3].")
    prefix = "digest_references"
    cited = {data[f"{prefix}-{index}-reference"]: index for index in range(int(data[f"{prefix}-INITIAL_FORMS"]))}
    data[f"{prefix}-{cited[str(reference.pk)]}-number"] = "3"  # [1] becomes [3]
    results = retitle_against(lambda: client.post(url, data).status_code, delivery)
    assert results == {"ingestion": WebhookDelivery.State.PROCESSED, "editor": 302}, results
    assert lost_locks() == []
    assert_retitled(digest, reference, delivery)
    assert digest.digest_references.get(reference=reference).number == 3
