"""Polling a tracked repository against a local server replaying GitHub, and ingest_github."""
import datetime
import json

import pytest
from django.core.management import CommandError, call_command

from digests.factories import RepositoryFactory
from digests.models import Reference
from ingestion.github import GitHubClient
from ingestion.models import IngestionRun, TrackedRepository
from ingestion.polling import sync_repository

from .replay import base_url, load

pytestmark = pytest.mark.django_db

REPO = "/repos/PyGithub/PyGithub"
SINCE = datetime.datetime(2012, 3, 15, tzinfo=datetime.UTC)
PULLS_QUERY = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": "100"}

REPOSITORY = load("RequesterThrottleTestCase.testDeferRequests")[0]
PULLS = load("Issue131.testGetPullsWithOrgHeadUser")[0]
COMMITS = load("Repository.testGetCommits")
RELEASES = load("RequesterThrottleTestCase.testDeferRequests")[1:]


def commit_date(item) -> datetime.datetime:
    return datetime.datetime.fromisoformat(item["commit"]["committer"]["date"])


def expected_commits() -> list[str]:
    """SHAs of the recorded commits landed since SINCE, newest first, up to the first older one."""
    shas = []
    for record in COMMITS:
        for item in json.loads(record.body):
            if commit_date(item) < SINCE:
                return shas
            shas.append(item["sha"])
    return shas


def serve_everything(httpserver):
    """The whole walk, in order: repository, closed pulls (2 pages), commits (2 pages), releases (3 pages)."""
    url = base_url(httpserver)
    httpserver.expect_ordered_request(REPO).respond_with_response(REPOSITORY.response(url))
    httpserver.expect_ordered_request(f"{REPO}/pulls", query_string=PULLS_QUERY) \
        .respond_with_response(PULLS.response(url))
    # the recorded Link says page 2 of 8 comes next; end the list there
    httpserver.expect_ordered_request("/repos/openmicroscopy/ome-documentation/pulls",
                                      query_string={"page": "2", "state": "closed"}).respond_with_json([])
    httpserver.expect_ordered_request(f"{REPO}/commits", query_string={"sha": "master", "per_page": "100"}) \
        .respond_with_response(COMMITS[0].response(url))
    httpserver.expect_ordered_request(COMMITS[1].path, query_string=COMMITS[1].query) \
        .respond_with_response(COMMITS[1].response(url))
    httpserver.expect_ordered_request(f"{REPO}/releases", query_string={"per_page": "100"}) \
        .respond_with_response(RELEASES[0].response(url))
    for record in RELEASES[1:]:
        httpserver.expect_ordered_request(record.path, query_string=record.query) \
            .respond_with_response(record.response(url))


@pytest.fixture
def tracked():
    return TrackedRepository.objects.create(repository=RepositoryFactory(full_name="PyGithub/PyGithub"))


@pytest.fixture
def client(httpserver):
    github = GitHubClient(base_url(httpserver), "t", sleep=lambda seconds: pytest.fail(f"slept {seconds}"))
    yield github
    github.close()


def test_sync_walks_every_list_and_stores_references(httpserver, tracked, client):
    serve_everything(httpserver)
    counts = sync_repository(tracked, client, since=SINCE)
    httpserver.check_assertions()
    assert len(httpserver.log) == 8

    pulls = Reference.objects.filter(kind="pull_request")
    recorded_pulls = json.loads(PULLS.body)
    assert pulls.count() == len(recorded_pulls)
    assert pulls.filter(state="merged").count() == sum(1 for p in recorded_pulls if p["merged_at"])
    assert pulls.get(key="231").state == "closed"  # closed without merging: no merged_at
    assert pulls.get(key="231").merged_at is None
    assert pulls.get(key="234").merged_at.isoformat() == "2013-02-01T11:04:37+00:00"

    commits = Reference.objects.filter(kind="commit")
    assert sorted(commits.values_list("key", flat=True)) == sorted(expected_commits())
    releases = Reference.objects.filter(kind="release")
    assert releases.count() == 30
    assert releases.get(key="v1.55").opened_at.isoformat() == "2021-04-26T04:44:57+00:00"

    total = len(recorded_pulls) + len(expected_commits()) + 30
    assert (counts.created, counts.updated, counts.unchanged) == (total, 0, 0)
    tracked.refresh_from_db()
    assert tracked.default_branch == "master"
    assert tracked.etags == {
        "pulls": PULLS.header("etag"), "commits": COMMITS[0].header("etag"), "releases": RELEASES[0].header("ETag")
    }
    assert tracked.last_synced_at is not None
    run = IngestionRun.objects.get()
    assert (run.source, run.status, run.subject, run.created) == ("poll", "succeeded", "PyGithub/PyGithub", total)


def test_running_it_again_changes_nothing(httpserver, tracked, client):
    serve_everything(httpserver)
    sync_repository(tracked, client, since=SINCE)
    updated_at = dict(Reference.objects.values_list("pk", "updated_at"))
    httpserver.clear_log()
    serve_everything(httpserver)
    counts = sync_repository(tracked, client, since=SINCE)
    assert (counts.created, counts.updated, counts.unchanged) == (0, 0, len(updated_at))
    assert dict(Reference.objects.values_list("pk", "updated_at")) == updated_at


def test_each_page_is_imported_in_one_batch(httpserver, tracked, client, monkeypatch):
    """The poll hands whole pages to the batch upserts (a fixed number of queries each), never item by item."""
    from ingestion import importers, polling

    pages = []
    for name in ("upsert_pull_requests", "upsert_commits", "upsert_releases"):
        batch = getattr(importers, name)
        monkeypatch.setattr(polling, name, lambda repository, items, _batch=batch, _name=name: (
            pages.append((_name, len(items))) or _batch(repository, items)))
    serve_everything(httpserver)
    sync_repository(tracked, client, since=SINCE)
    assert pages[0] == ("upsert_pull_requests", len(json.loads(PULLS.body)))
    assert [name for name, _size in pages].count("upsert_commits") == 2  # the two recorded pages
    assert sum(size for name, size in pages if name == "upsert_commits") == len(expected_commits())
    assert sum(size for name, size in pages if name == "upsert_releases") == 30


def test_next_poll_sends_stored_etags_and_304_means_nothing_new(httpserver, tracked, client):
    serve_everything(httpserver)
    sync_repository(tracked, client, since=SINCE)
    before = Reference.objects.count()
    httpserver.clear_log()
    url = base_url(httpserver)
    httpserver.expect_ordered_request(REPO).respond_with_response(REPOSITORY.response(url))
    for name, query, record in (("pulls", PULLS_QUERY, PULLS), ("commits", {"sha": "master", "per_page": "100"},
                                                                   COMMITS[0]),
                                ("releases", {"per_page": "100"}, RELEASES[0])):
        httpserver.expect_ordered_request(f"{REPO}/{name}", query_string=query,
                                          headers={"If-None-Match": record.header("etag")}) \
            .respond_with_data("", status=304)
    tracked.refresh_from_db()
    counts = sync_repository(tracked, client)  # since the last sync
    httpserver.check_assertions()
    assert len(httpserver.log) == 4
    assert (counts.created, counts.updated, counts.unchanged) == (0, 0, 0)
    assert Reference.objects.count() == before


def test_stops_at_the_first_item_older_than_the_last_sync(httpserver, tracked, client):
    url = base_url(httpserver)
    since = datetime.datetime(2013, 1, 20, tzinfo=datetime.UTC)
    httpserver.expect_ordered_request(REPO).respond_with_response(REPOSITORY.response(url))
    httpserver.expect_ordered_request(f"{REPO}/pulls", query_string=PULLS_QUERY) \
        .respond_with_response(PULLS.response(url))
    for name in ("commits", "releases"):
        httpserver.expect_ordered_request(f"{REPO}/{name}").respond_with_json([])
    sync_repository(tracked, client, since=since)
    httpserver.check_assertions()
    newer = []
    for pull in json.loads(PULLS.body):
        if datetime.datetime.fromisoformat(pull["updated_at"]) < since:
            break
        newer.append(str(pull["number"]))
    assert sorted(Reference.objects.values_list("key", flat=True)) == sorted(newer)
    assert "pulls?page=2" not in " ".join(request.url for request, _ in httpserver.log)


def test_a_failed_poll_is_recorded_and_keeps_the_last_sync(httpserver, tracked):
    httpserver.expect_request(REPO).respond_with_json({"message": "Not Found"}, status=404)
    github = GitHubClient(base_url(httpserver))
    with pytest.raises(Exception, match="404"):
        sync_repository(tracked, github, since=SINCE)
    tracked.refresh_from_db()
    assert tracked.last_synced_at is None and tracked.last_polled_at is not None
    run = IngestionRun.objects.get()
    assert run.status == "failed" and "404" in run.error


def test_ingest_github_command_tracks_and_imports(httpserver, settings, capsys):
    settings.GITHUB_API_URL = base_url(httpserver)
    serve_everything(httpserver)
    call_command("ingest_github", "PyGithub/PyGithub", "--since", "2012-03-15")
    assert TrackedRepository.objects.get().repository.full_name == "PyGithub/PyGithub"
    total = len(json.loads(PULLS.body)) + len(expected_commits()) + 30
    assert Reference.objects.count() == total
    assert f"{total} created, 0 updated, 0 unchanged" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [(["not a repo"], "owner/name"),
                                           (["a/b", "--since", "yesterday"], "--since")])
def test_ingest_github_command_rejects_bad_input(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("ingest_github", *args)
