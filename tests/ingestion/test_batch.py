"""The page-at-a-time import the poller uses: the same results as row by row, in a fixed number of queries."""
import copy
import json

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from digests.factories import DigestFactory, DigestReferenceFactory, RepositoryFactory
from digests.models import Reference
from ingestion.importers import Counts, upsert_pull_request, upsert_pull_requests
from ingestion.models import ReferenceSyncState
from reader.caching import VERSION_KEY
from publishing.rendering import render_github_markdown
from publishing.workflow import Status

from .replay import load

pytestmark = pytest.mark.django_db

RECORDED = json.loads(load("Issue131.testGetPullsWithOrgHeadUser")[0].body)
HOSTILE_BODY = (
    'Fixes <script>alert("x")</script> and <img src=x onerror="alert(1)">\n\n'
    '[click](javascript:alert(1)) <a href="https://example.com" onclick="steal()">ok</a>\n\n'
    '<iframe src="https://evil.example"></iframe>'
)
COMPARED = ["kind", "key", "number", "sha", "title", "url", "author_login", "co_authors", "state", "merged_at",
            "labels", "body", "body_html", "opened_at"]


def pulls(count: int, start: int = 1) -> list[dict]:
    """`count` recorded pull requests with numbers start, start+1, …"""
    listing = []
    for number in range(start, start + count):
        pull = copy.deepcopy(RECORDED[number % len(RECORDED)])
        pull["number"] = number
        listing.append(pull)
    return listing


def row_by_row(repository, listing: list[dict]) -> Counts:
    counts = Counts()
    for pull in listing:
        counts.add(upsert_pull_request(repository, pull))
    return counts


def stored(repository) -> dict:
    """Every stored field and synced version of a repository's pull requests, by key."""
    references = Reference.objects.filter(repository=repository).select_related("sync_state")
    return {
        ref.key: ({name: getattr(ref, name) for name in COMPARED},
                  getattr(getattr(ref, "sync_state", None), "github_updated_at", None))
        for ref in references
    }


def revisions(listing: list[dict]) -> list[dict]:
    """A later poll: one PR edited, one merged, one stale copy of an edit, one unchanged, one new."""
    later = copy.deepcopy(listing[:4]) + pulls(1, start=500)
    later[0].update(title="Edited title", body="Edited **body**", updated_at="2030-01-01T00:00:00Z")
    later[1].update(merged=True, merged_at="2030-01-02T00:00:00Z", merge_commit_sha="a" * 40,
                    updated_at="2030-01-02T00:00:00Z")
    later[2].update(title="An older version", updated_at="2000-01-01T00:00:00Z")
    return later


def test_a_page_gives_the_same_references_and_counts_as_row_by_row():
    one, other = RepositoryFactory(full_name="one/repo"), RepositoryFactory(full_name="other/repo")
    listing = pulls(12)
    listing[3]["body"] = HOSTILE_BODY
    assert upsert_pull_requests(one, listing).as_dict() == row_by_row(other, listing).as_dict() == {
        "created": 12, "updated": 0, "unchanged": 0}
    assert stored(one) == stored(other)

    later = revisions(listing)
    batch_counts, row_counts = upsert_pull_requests(one, later), row_by_row(other, later)
    assert batch_counts.as_dict() == row_counts.as_dict() == {"created": 1, "updated": 2, "unchanged": 2}
    assert stored(one) == stored(other)
    assert Reference.objects.get(repository=one, key=listing[2]["number"]).title == listing[2]["title"]


def test_a_merge_is_final_in_a_page_too():
    repository = RepositoryFactory()
    [pull] = pulls(1)
    pull.update(merged=True, merged_at="2030-01-02T00:00:00Z", updated_at="2030-01-02T00:00:00Z")
    upsert_pull_requests(repository, [pull])
    reopened = {**pull, "merged": False, "merged_at": None, "state": "open", "updated_at": "2031-01-01T00:00:00Z"}
    assert upsert_pull_requests(repository, [reopened]).as_dict() == {"created": 0, "updated": 0, "unchanged": 1}
    reference = Reference.objects.get(repository=repository)
    assert reference.state == "merged"
    assert reference.sync_state.github_updated_at.year == 2030


def test_a_key_listed_twice_in_a_page_is_judged_in_order():
    one, other = RepositoryFactory(full_name="one/repo"), RepositoryFactory(full_name="other/repo")
    first, = pulls(1)
    newer = {**first, "title": "Newer", "updated_at": "2030-01-01T00:00:00Z"}
    older = {**first, "title": "Older", "updated_at": "2000-01-01T00:00:00Z"}
    for page in ([first, newer, older], [older, newer]):
        assert upsert_pull_requests(one, page).as_dict() == row_by_row(other, page).as_dict()
        assert stored(one) == stored(other)
    assert Reference.objects.get(repository=one).title == "Newer"


def test_hostile_bodies_are_sanitised_when_created_and_when_changed():
    repository = RepositoryFactory()
    listing = pulls(2)
    listing[0]["body"] = HOSTILE_BODY
    upsert_pull_requests(repository, listing)
    listing[1].update(body=HOSTILE_BODY + "\n\nagain", updated_at="2030-01-01T00:00:00Z")
    upsert_pull_requests(repository, listing)
    for reference in Reference.objects.filter(repository=repository):
        assert reference.body_html == render_github_markdown(reference.body)
        for dangerous in ("<script", "onerror", "onclick", "href=\"javascript", "<iframe"):
            assert dangerous not in reference.body_html
        assert 'href="https://example.com"' in reference.body_html


def test_unchanged_rows_are_not_written_and_keep_updated_at():
    repository = RepositoryFactory()
    listing = pulls(5)
    upsert_pull_requests(repository, listing)
    before = dict(Reference.objects.filter(repository=repository).values_list("key", "updated_at"))
    listing[0]["title"] = "Changed"
    with CaptureQueriesContext(connection) as queries:
        counts = upsert_pull_requests(repository, listing)
    assert counts.as_dict() == {"created": 0, "updated": 1, "unchanged": 4}
    after = dict(Reference.objects.filter(repository=repository).values_list("key", "updated_at"))
    assert after.pop(str(listing[0]["number"])) > before.pop(str(listing[0]["number"]))
    assert after == before
    updates = [query["sql"] for query in queries.captured_queries if query["sql"].startswith("UPDATE")]
    assert len(updates) == 1 and "body_html" not in updates[0]


def test_markdown_is_rendered_only_for_new_and_changed_bodies(monkeypatch):
    repository = RepositoryFactory()
    listing = pulls(6)
    rendered = []
    monkeypatch.setattr("digests.models.references.render_github_markdown",
                        lambda text: rendered.append(text) or render_github_markdown(text))
    upsert_pull_requests(repository, listing)
    assert len(rendered) == 6
    listing[0]["body"], listing[1]["title"] = "A new body", "A new title"
    upsert_pull_requests(repository, listing)
    assert rendered[6:] == ["A new body"]


def page_queries(repository, listing: list[dict]) -> int:
    with CaptureQueriesContext(connection) as queries:
        upsert_pull_requests(repository, listing)
    return len(queries)


def test_queries_per_page_do_not_grow_with_its_size():
    """Created, then all changed, then all unchanged: each a fixed number of queries for 3 PRs as for 30."""
    small, large = RepositoryFactory(full_name="small/repo"), RepositoryFactory(full_name="large/repo")
    listing_small, listing_large = pulls(3), pulls(30)
    counts = []
    for repository, listing in ((small, listing_small), (large, listing_large)):
        created = page_queries(repository, listing)
        for pull in listing:
            pull.update(title=pull["title"] + " (edited)", body=pull["body"] or "now with a body",
                        updated_at="2030-01-01T00:00:00Z")
        updated = page_queries(repository, listing)
        unchanged = page_queries(repository, listing)
        counts.append((created, updated, unchanged))
    assert counts[0] == counts[1]
    # created: + one EXISTS asking whether a published digest cites any of them (then the page cache stays)
    assert counts[0][0] <= 6 and counts[0][1] <= 7 and counts[0][2] <= 3, counts[0]
    assert ReferenceSyncState.objects.filter(reference__repository=large).count() == 30


def test_only_a_page_that_changed_what_readers_see_invalidates_the_page_cache():
    """New references and edits of uncited ones change no public page (issue 19: every poll used to
    drop the whole cache); an edit of a reference a published digest cites does."""
    repository = RepositoryFactory()
    listing = pulls(3)
    cache.set(VERSION_KEY, "before")
    upsert_pull_requests(repository, listing)  # new, cited by nothing
    assert cache.get(VERSION_KEY) == "before"

    listing[1]["title"] = "Edited"
    upsert_pull_requests(repository, listing)  # changed, still cited by nothing
    assert cache.get(VERSION_KEY) == "before"

    cited = Reference.objects.get(repository=repository, key=str(listing[1]["number"]))
    draft = DigestFactory(status=Status.DRAFT)
    DigestReferenceFactory(digest=draft, reference=cited, number=1)
    listing[1]["title"] = "Edited for a draft"
    cache.set(VERSION_KEY, "before")
    upsert_pull_requests(repository, listing)  # cited by a draft only
    assert cache.get(VERSION_KEY) == "before"

    DigestReferenceFactory(digest=DigestFactory(status=Status.PUBLISHED), reference=cited, number=1)
    cache.set(VERSION_KEY, "before")
    listing[1]["title"] = "Edited again"
    upsert_pull_requests(repository, listing)
    assert cache.get(VERSION_KEY) is None

    cache.set(VERSION_KEY, "before")
    upsert_pull_requests(repository, listing)  # nothing changed: pages stay valid
    assert cache.get(VERSION_KEY) == "before"


def test_a_key_inserted_concurrently_falls_back_to_row_by_row(monkeypatch):
    """A webhook stores one of the page's PRs between our SELECT and INSERT: the page still imports."""
    repository = RepositoryFactory()
    listing = pulls(3)
    upsert_pull_request(repository, listing[1])
    original = type(Reference.objects.all()).upsert_many

    def blind_to_existing_rows(queryset, *args, **kwargs):  # as if the row arrived after our SELECT
        return original(queryset.none(), *args, **kwargs)

    monkeypatch.setattr(type(Reference.objects.all()), "upsert_many", blind_to_existing_rows)
    counts = upsert_pull_requests(repository, listing)
    assert counts.as_dict() == {"created": 2, "updated": 0, "unchanged": 1}
    assert Reference.objects.filter(repository=repository).count() == 3
