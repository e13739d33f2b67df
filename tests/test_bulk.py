"""repojournal.bulk: one INSERT with server-side bound arrays on PostgreSQL, bulk_create elsewhere."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from digests.factories import RepositoryFactory
from digests.models import Reference
from repojournal.bulk import bulk_insert

pytestmark = pytest.mark.django_db


def test_inserts_every_field_in_one_query_and_sets_the_ids():
    repository = RepositoryFactory()
    merged = timezone.now() - datetime.timedelta(days=1)
    references = [
        Reference(repository=repository, kind="pull_request", key="1", number=1, title="Quoted 'title' \"here\"",
                  co_authors=["Ada <ada@example.com>"], labels=["bug", "ünïcode"], merged_at=merged,
                  body="Body with \\ backslash, {braces}, NULL-ish null and a comma, too", body_html="<p>x</p>"),
        Reference(repository=repository, kind="pull_request", key="2", title="No number", body=""),
    ]
    with CaptureQueriesContext(connection) as queries:
        bulk_insert(Reference, references, "default")
    assert len(queries) == 1
    assert all(reference.pk and not reference._state.adding for reference in references)
    for reference in references:
        stored = Reference.objects.get(pk=reference.pk)
        for name in ("key", "number", "title", "co_authors", "labels", "merged_at", "body", "body_html"):
            assert getattr(stored, name) == getattr(reference, name), name
        assert stored.created_at and stored.updated_at
    assert Reference.objects.get(key="2").number is None


def test_nothing_to_insert_is_no_query():
    with CaptureQueriesContext(connection) as queries:
        bulk_insert(Reference, [], "default")
    assert len(queries) == 0
