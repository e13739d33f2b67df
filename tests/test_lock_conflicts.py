"""A write that loses a lock conflict is tried once more, then answered as a conflict, never as an outage.

PostgreSQL raises the same ``OperationalError`` for a deadlock, a serialization failure or a lock
timeout as for a lost connection, and all of them used to be answered "The database is unavailable;
retry shortly." (repojournal/outages.py). The end-to-end tests hold a digest's row in a transaction
of their own and give the request's connection a short ``lock_timeout``, so each attempt of the
request loses a real lock conflict (SQLSTATE 55P03) at that row; the blocker lets go after the
first loss (the retry wins) or after the second (the conflict is answered: 409 in the API, the
admin's form again with what was typed). A deadlock between our own writes, the case this is for,
is made impossible by the lock order (tests/digests/test_citation_locks.py), so it cannot be staged
through the write paths; PostgreSQL's own errors with each code are classified below.
"""
import json
import sqlite3
import threading

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.test import Client

from accounts.models import ApiToken
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory
from digests.models import Digest
from publishing.locks import ADMIN_MESSAGE, API_DETAIL, is_lock_conflict
from publishing.workflow import Status

from .api.conftest import bearer

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row locks held by one transaction against another are PostgreSQL's; SQLite has one writer at a "
           "time (CI's PostgreSQL pass runs these)",
)


# --- Telling a lock conflict from an outage: PostgreSQL's and SQLite's own errors ---------------------

@postgresql_only
@pytest.mark.django_db
@pytest.mark.parametrize("sqlstate, conflict", [
    ("40P01", True),   # deadlock_detected
    ("40001", True),   # serialization_failure
    ("55P03", True),   # lock_not_available: lock_timeout, NOWAIT
    ("57P01", False),  # admin_shutdown: the server is going away
    ("08006", False),  # connection_failure
    ("53300", False),  # too_many_connections
    ("57014", False),  # query_canceled: statement_timeout
])
def test_postgresql_s_errors_are_told_apart_by_their_code(sqlstate, conflict):
    with pytest.raises(OperationalError) as raised, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DO $$ BEGIN RAISE EXCEPTION 'staged' USING ERRCODE = '{sqlstate}'; END $$")
    assert is_lock_conflict(raised.value) is conflict
    assert is_lock_conflict(raised.value.__cause__) is conflict  # the driver's own error too


def test_sqlite_s_busy_database_is_a_lock_conflict_and_a_missing_table_is_not(tmp_path):
    """SQLite gives up after its busy timeout with "database is locked" while another connection writes."""
    path = tmp_path / "busy.sqlite3"
    writer, other = sqlite3.connect(path, isolation_level=None), sqlite3.connect(path, timeout=0)
    try:
        writer.execute("CREATE TABLE t (x)")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.OperationalError, match="database is locked") as busy:
            other.execute("INSERT INTO t VALUES (2)")
        with pytest.raises(sqlite3.OperationalError, match="no such table") as missing:
            other.execute("SELECT * FROM missing")
    finally:
        writer.close()
        other.close()
    assert is_lock_conflict(busy.value)
    assert not is_lock_conflict(missing.value)


# --- The write paths: a row held by another transaction -----------------------------------------------

class HeldRow:
    """A digest's row locked ``FOR UPDATE`` by a transaction in a thread of its own until ``release``."""

    def __init__(self, digest: Digest):
        self.digest, self.held, self.released = digest, threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, name="holder")

    def _hold(self):
        try:
            with transaction.atomic():
                Digest.objects.select_for_update().get(pk=self.digest.pk)
                self.held.set()
                self.released.wait(30)
        finally:
            connections.close_all()

    def __enter__(self):
        self.thread.start()
        assert self.held.wait(10)
        return self

    def release(self):
        self.released.set()
        self.thread.join(10)

    def __exit__(self, *exc):
        self.release()


class LostConflicts:
    """Counts the lock conflicts the test thread's connection loses; lets the holder go after `release_after`."""

    def __init__(self, holder: HeldRow, release_after: int):
        self.holder, self.release_after, self.count = holder, release_after, 0

    def __call__(self, execute, sql, params, many, context):
        try:
            return execute(sql, params, many, context)
        except OperationalError as error:
            if is_lock_conflict(error):
                self.count += 1
                if self.count == self.release_after:
                    self.holder.release()  # gone before the next attempt starts
            raise


@pytest.fixture
def held():
    """``held(digest, release_after=n)``: the digest's row held, the request's lock waits 200 ms at most;
    yields the counter of conflicts lost. The holder lets go after the n-th loss (or at the end)."""
    holders = []

    def hold(digest: Digest, release_after: int):
        holder = HeldRow(digest).__enter__()
        holders.append(holder)
        lost = LostConflicts(holder, release_after)
        wrapper = connection.execute_wrapper(lost)
        wrapper.__enter__()
        holders.append(wrapper)
        return lost

    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    try:
        yield hold
    finally:
        for item in reversed(holders):
            item.__exit__(None, None, None)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


ROLES = {"editor": Status.DRAFT, "publisher": Status.PUBLISHED}  # what each role may edit


@pytest.fixture(params=sorted(ROLES))
def staff(request, editor, publisher):
    """Signed in as an Editor (a draft digest) and as a Publisher (a published one): (user, digest)."""
    user = {"editor": editor, "publisher": publisher}[request.param]
    status = ROLES[request.param]
    unpublished = {"published_at": None} if status == Status.DRAFT else {}
    digest = DigestFactory(status=status, summary="One change [1].", headline="The headline before", **unpublished)
    DigestReferenceFactory(digest=digest, reference=ReferenceFactory(), number=1)
    return user, digest


def put_headline(user, digest: Digest, headline: str):
    """The API's PUT of `digest` as read, with a new headline, by a token of `user`."""
    token = ApiToken.issue(user, "test token", ["write:content", "read:drafts"])[1]
    client = Client()
    detail = client.get(f"/api/v1/digests/{digest.slug}", **bearer(token)).json()
    payload = {name: detail[name] for name in ("date", "summary", "body", "slug", "action_items", "faq")}
    payload.update(topic={"slug": detail["topic"]["slug"]}, headline=headline, references=[
        {"number": cited["number"], "reference": {name: cited["reference"][name] for name in
                                                  ("repository", "kind", "key", "title", "number")}}
        for cited in detail["references"]
    ])
    return client.put(f"/api/v1/digests/{digest.slug}", json.dumps(payload), content_type="application/json",
                      **bearer(token))


def headline_of(digest: Digest) -> str:
    return Digest.objects.values_list("headline", flat=True).get(pk=digest.pk)


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_an_api_write_that_loses_a_lock_conflict_once_is_tried_again_and_saved(staff, held):
    user, digest = staff
    lost = held(digest, release_after=1)
    response = put_headline(user, digest, "Saved on the second try")
    assert response.status_code == 200, response.content
    assert lost.count == 1
    assert headline_of(digest) == "Saved on the second try"


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_an_api_write_that_loses_twice_is_a_409_in_the_api_s_shape_not_an_outage(staff, held):
    user, digest = staff
    lost = held(digest, release_after=2)
    response = put_headline(user, digest, "Never saved")
    assert response.status_code == 409, response.content
    assert response.json() == {"detail": API_DETAIL, "errors": []}
    assert "no-store" in response["Cache-Control"] and "Retry-After" not in response
    assert lost.count == 2  # the first try and exactly one more
    assert headline_of(digest) == "The headline before"


def post_change_form(user, digest: Digest, admin_form_data, **changes):
    client = Client()
    client.force_login(user)
    url = f"/admin/digests/digest/{digest.pk}/change/"
    return client.post(url, admin_form_data(client.get(url), **changes))


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_an_admin_save_that_loses_a_lock_conflict_once_is_tried_again_and_saved(staff, held, admin_form_data):
    user, digest = staff
    lost = held(digest, release_after=1)
    response = post_change_form(user, digest, admin_form_data, headline="Saved on the second try")
    assert response.status_code == 302
    assert lost.count == 1
    assert headline_of(digest) == "Saved on the second try"


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_an_admin_save_that_loses_twice_shows_the_form_as_typed_and_says_what_happened(
        staff, held, admin_form_data):
    user, digest = staff
    lost = held(digest, release_after=2)
    response = post_change_form(user, digest, admin_form_data, headline="Typed, never saved", summary="Typed too [1].")
    assert response.status_code == 200
    assert lost.count == 2
    form = response.context["adminform"].form
    assert form.non_field_errors() == [ADMIN_MESSAGE]
    assert ADMIN_MESSAGE in response.content.decode()
    assert (form["headline"].value(), form["summary"].value()) == ("Typed, never saved", "Typed too [1].")
    citations = next(inline.formset for inline in response.context["inline_admin_formsets"]
                     if inline.formset.prefix == "digest_references")
    assert [row["number"].value() for row in citations.forms[:1]] == ["1"]  # the inline rows as posted
    assert headline_of(digest) == "The headline before"


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_bulk_action_that_loses_a_lock_conflict_is_a_409_page_not_an_outage(publisher, held):
    """Paths without a retry of their own get the middleware's answer: a conflict, nothing saved."""
    digest = DigestFactory(status=Status.IN_REVIEW, published_at=None)
    held(digest, release_after=1)
    client = Client()
    client.force_login(publisher)
    response = client.post("/admin/digests/digest/", {"action": "publish", "_selected_action": [digest.pk]})
    assert response.status_code == 409
    assert "Nothing was saved" in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    assert Digest.objects.get(pk=digest.pk).status == Status.IN_REVIEW
