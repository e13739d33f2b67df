"""POST /webhooks/github with every shared payload, and the processing of stored deliveries."""
import json

import pytest

from digests.models import Reference
from ingestion.models import IngestionRun, WebhookDelivery
from ingestion.deliveries import process_delivery
from ingestion.webhooks import signature_matches

from .conftest import HELLO_WORLD, fixture_body, fixture_payload, sign

pytestmark = pytest.mark.django_db

# file -> (event, expected delivery state, expected references as (kind, key, state))
FIXTURES = {
    "ping": ("ping", "processed", []),
    "issues.opened": ("issues", "processed", [("issue", "1", "open")]),
    "pull_request.opened": ("pull_request", "processed", [("pull_request", "2", "open")]),
    "pull_request.closed": ("pull_request", "processed", [("pull_request", "2", "closed")]),
    "pull_request.labeled": ("pull_request", "processed", [("pull_request", "2", "open")]),
    "pull_request.reopened": ("pull_request", "processed", [("pull_request", "2", "open")]),
    "pull_request.synchronize": ("pull_request", "processed", [("pull_request", "2", "open")]),
    "push": ("push", "ignored", []),  # a tag deletion: no commits
    "push.with-new-branch": ("push", "ignored", []),  # a branch creation: no new commits
    "release.published": ("release", "processed", [("release", "0.0.1", "published")]),
}


def references():
    return sorted(Reference.objects.values_list("kind", "key", "state"))


def test_signature_matches_githubs_documented_vector():
    documented = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_matches("It's a Secret to Everybody", b"Hello, World!", documented)
    assert not signature_matches("It's a Secret to Everybody", b"Hello, World?", documented)
    assert not signature_matches("another secret", b"Hello, World!", documented)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_fixture_is_stored_queued_and_processed(name, tracked, post_webhook,
                                                      django_capture_on_commit_callbacks):
    event, state, expected = FIXTURES[name]
    body = fixture_body(name)
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_webhook(event, body, guid=f"guid-{name}")
    assert response.status_code == 202
    assert response.json() == {"delivery": f"guid-{name}", "status": "queued"}
    assert len(callbacks) == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.guid, delivery.event, delivery.state) == (f"guid-{name}", event, "pending")
    assert bytes(delivery.body) == body
    assert delivery.action == (fixture_payload(name).get("action") or "")
    assert delivery.headers["X-Hub-Signature-256"] == sign(body)

    process_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == state, delivery.detail
    assert references() == sorted(expected)
    run = IngestionRun.objects.get(delivery=delivery)
    assert (run.source, run.created) == ("webhook", len(expected))
    assert run.finished_at is not None


def test_pull_request_fields(tracked, post_webhook):
    post_webhook("pull_request", fixture_body("pull_request.labeled"), guid="g1")
    process_delivery(WebhookDelivery.objects.get().pk)
    pull = Reference.objects.get(kind="pull_request")
    assert pull.repository == tracked.repository
    assert (pull.number, pull.title) == (2, "Update the README with new information.")
    assert pull.url == "https://github.com/Codertocat/Hello-World/pull/2"
    assert (pull.author_login, pull.labels) == ("Codertocat", ["bug"])
    assert pull.opened_at.isoformat() == "2019-05-15T15:20:33+00:00"
    assert "pretty simple change" in pull.body_html


def test_closed_with_merge_commit_sha_but_not_merged_is_not_a_merge(tracked, post_webhook):
    payload = fixture_payload("pull_request.closed")
    assert payload["pull_request"]["merge_commit_sha"]  # GitHub sets it on unmerged PRs too
    post_webhook("pull_request", fixture_body("pull_request.closed"))
    process_delivery(WebhookDelivery.objects.get().pk)
    pull = Reference.objects.get()
    assert (pull.state, pull.merged_at, pull.sha) == ("closed", None, "")


def merged_variant() -> dict:
    payload = fixture_payload("pull_request.closed")
    payload["pull_request"].update(merged=True, merged_at="2019-05-15T15:21:18Z")
    return payload


def test_merged_pull_request(tracked, post_webhook):
    post_webhook("pull_request", merged_variant())
    process_delivery(WebhookDelivery.objects.get().pk)
    pull = Reference.objects.get()
    assert pull.state == "merged"
    assert pull.merged_at.isoformat() == "2019-05-15T15:21:18+00:00"
    assert pull.sha == "c4295bd74fb0f4fda03689c3df3f2803b658fd85"


@pytest.mark.parametrize("closed", [merged_variant, lambda: fixture_payload("pull_request.closed")])
def test_out_of_order_closed_before_opened_keeps_the_later_state(closed, tracked, post_webhook):
    expected_state = closed()["pull_request"]["merged"] and "merged" or "closed"
    post_webhook("pull_request", closed(), guid="closed")
    post_webhook("pull_request", fixture_body("pull_request.opened"), guid="opened")
    for guid in ("closed", "opened"):
        process_delivery(WebhookDelivery.objects.get(guid=guid).pk)
    pull = Reference.objects.get()
    assert pull.state == expected_state
    assert WebhookDelivery.objects.get(guid="opened").state == "processed"
    assert IngestionRun.objects.get(delivery__guid="opened").unchanged == 1


def test_redelivery_is_acknowledged_and_changes_nothing(tracked, post_webhook, django_capture_on_commit_callbacks):
    body = fixture_body("pull_request.opened")
    with django_capture_on_commit_callbacks() as callbacks:
        first = post_webhook("pull_request", body, guid="same-guid")
        again = post_webhook("pull_request", body, guid="same-guid")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == {"delivery": "same-guid", "status": "duplicate"}
    assert len(callbacks) == 1
    assert WebhookDelivery.objects.count() == 1


def test_processing_twice_changes_nothing(tracked, post_webhook):
    post_webhook("push", pushed_commit())
    delivery = WebhookDelivery.objects.get()
    assert process_delivery(delivery.pk) is not None
    assert process_delivery(delivery.pk) is None  # already processed: skipped
    process_delivery(delivery.pk, force=True)  # the admin's reprocess
    assert Reference.objects.count() == 1
    assert list(IngestionRun.objects.order_by("id").values_list("created", "unchanged")) == [(1, 0), (0, 1)]


@pytest.mark.parametrize(
    "signature, status",
    [("", 401), (sign(b"something else"), 403), (sign(fixture_body("ping"), "wrong secret"), 403), ("sha1=abc", 403)],
)
def test_unsigned_or_wrongly_signed_is_refused_and_nothing_is_stored(
    signature, status, tracked, post_webhook, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_webhook("ping", fixture_body("ping"), signature=signature)
    assert response.status_code == status
    assert "error" in response.json()
    assert not WebhookDelivery.objects.exists()
    assert callbacks == []


def test_refused_when_no_secret_is_configured(settings, post_webhook):
    body = fixture_body("ping")
    settings.GITHUB_WEBHOOK_SECRET = ""
    assert post_webhook("ping", body, signature=sign(body)).status_code == 403
    assert not WebhookDelivery.objects.exists()


def test_payloads_beyond_djangos_upload_limit_up_to_githubs_are_accepted(settings, tracked, post_webhook):
    payload = fixture_payload("pull_request.opened")
    payload["pull_request"]["body"] = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1000)
    response = post_webhook("pull_request", payload)
    assert response.status_code == 202
    process_delivery(WebhookDelivery.objects.get().pk)
    assert len(Reference.objects.get().body) == settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1000


def test_payloads_beyond_githubs_limit_are_413(post_webhook, monkeypatch):
    monkeypatch.setattr("ingestion.views.MAX_BODY_BYTES", 1000)
    response = post_webhook("pull_request", fixture_body("pull_request.opened"))
    assert response.status_code == 413
    assert not WebhookDelivery.objects.exists()


def test_database_down_is_a_503_with_retry_after_and_no_traceback(post_webhook, monkeypatch):
    """Nothing stored, so no 2xx: GitHub records a failure the redelivery task asks it to repeat.
    (tests/faults/test_outages.py stops a real PostgreSQL.)"""
    from django.db import OperationalError

    def database_down(**values):
        raise OperationalError("connection to server at \"127.0.0.1\", port 5432 failed: Connection refused")

    monkeypatch.setattr(WebhookDelivery.objects, "insert_new", database_down)
    response = post_webhook("pull_request", fixture_body("pull_request.opened"))
    assert response.status_code == 503
    assert response["Retry-After"] == "60"
    assert response.json() == {"error": "The delivery could not be stored; it will be requested again."}


def test_truncated_body_fails_the_signature(post_webhook):
    body = fixture_body("pull_request.opened")
    response = post_webhook("pull_request", body[: len(body) // 2], signature=sign(body))
    assert response.status_code == 403
    assert not WebhookDelivery.objects.exists()


@pytest.mark.parametrize(
    "body", [fixture_body("pull_request.opened")[:500], b"not json at all", b"\xff\xfe\x00", b"[1, 2]", b"   "]
)
def test_signed_but_not_a_json_object_is_a_400(body, post_webhook):
    response = post_webhook("pull_request", body)
    assert response.status_code == 400
    assert "JSON" in response.json()["error"]
    assert not WebhookDelivery.objects.exists()


def test_missing_github_headers_is_a_400(client, webhook_secret):
    body = fixture_body("ping")
    response = client.post("/webhooks/github", data=body, content_type="application/json",
                           headers={"X-Hub-Signature-256": sign(body)})
    assert response.status_code == 400
    assert "X-GitHub-Delivery" in response.json()["error"]


def test_form_encoded_payloads_are_refused_with_415(post_webhook):
    response = post_webhook("ping", b"payload=%7B%7D", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


def test_get_is_not_allowed(client):
    assert client.get("/webhooks/github").status_code == 405


def test_untracked_repository_is_stored_and_ignored(db, post_webhook):
    post_webhook("pull_request", fixture_body("pull_request.opened"))
    delivery = WebhookDelivery.objects.get()
    process_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == "ignored"
    assert HELLO_WORLD in delivery.detail
    assert not Reference.objects.exists()


def test_disabled_tracking_is_ignored(tracked, post_webhook):
    tracked.enabled = False
    tracked.save()
    post_webhook("release", fixture_body("release.published"))
    process_delivery(WebhookDelivery.objects.get().pk)
    assert WebhookDelivery.objects.get().state == "ignored"
    assert not Reference.objects.exists()


def test_unknown_event_is_stored_and_ignored(tracked, post_webhook):
    response = post_webhook("star", {"action": "created", "repository": {"full_name": HELLO_WORLD}})
    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    process_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.event, delivery.state) == ("star", "ignored")
    assert IngestionRun.objects.get().status == "ignored"


@pytest.mark.parametrize("event, action", [("pull_request", "assigned"), ("issues", "labeled"),
                                           ("release", "created")])
def test_unhandled_actions_are_ignored(event, action, tracked, post_webhook):
    post_webhook(event, {"action": action, "repository": {"full_name": HELLO_WORLD}})
    process_delivery(WebhookDelivery.objects.get().pk)
    assert WebhookDelivery.objects.get().state == "ignored"
    assert not Reference.objects.exists()


def test_push_to_another_branch_is_ignored(tracked, post_webhook):
    payload = pushed_commit()
    payload["ref"] = "refs/heads/feature"
    post_webhook("push", payload)
    process_delivery(WebhookDelivery.objects.get().pk)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "ignored"
    assert "default branch" in delivery.detail


def pushed_commit() -> dict:
    """A push of one new commit to the default branch, derived from the branch-creation fixture."""
    payload = fixture_payload("push.with-new-branch")
    payload.update(created=False, before="5" * 40)
    return payload


def test_push_to_the_default_branch_stores_its_commits(tracked, post_webhook):
    post_webhook("push", pushed_commit())
    process_delivery(WebhookDelivery.objects.get().pk)
    commit = Reference.objects.get()
    assert (commit.kind, commit.key, commit.sha) == ("commit", "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                                                     "6113728f27ae82c7b1a177c8d03f9e96e0adf246")
    assert (commit.title, commit.author_login) == ("Initial commit", "Codertocat")
    assert commit.url == "https://github.com/Codertocat/Hello-World/commit/6113728f27ae82c7b1a177c8d03f9e96e0adf246"


def test_push_commits_record_pr_number_and_co_authors(tracked, post_webhook):
    payload = pushed_commit()
    payload["commits"][0]["message"] = (
        "Fix the README (#42)\n\nLonger text.\n\nCo-authored-by: Mona Lisa <mona@example.com>\n"
        "co-authored-by: hubot <hubot@example.com>\nCo-authored-by: Mona Lisa <mona@example.com>"
    )
    post_webhook("push", payload)
    process_delivery(WebhookDelivery.objects.get().pk)
    commit = Reference.objects.get()
    assert (commit.kind, commit.number, commit.title) == ("commit", 42, "Fix the README (#42)")
    assert commit.co_authors == ["Mona Lisa", "hubot"]
    assert commit.merged_at.isoformat() == "2019-05-15T15:19:25+00:00"


def test_a_malformed_payload_fails_the_delivery_without_losing_it(tracked, post_webhook):
    post_webhook("pull_request", {"action": "opened", "repository": {"full_name": HELLO_WORLD}})
    delivery = WebhookDelivery.objects.get()
    with pytest.raises(KeyError):
        process_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("failed", 1)
    assert "pull_request" in delivery.detail
    assert IngestionRun.objects.get().status == "failed"


def test_untrusted_body_is_sanitised(tracked, post_webhook):
    payload = fixture_payload("pull_request.opened")
    payload["pull_request"]["body"] = 'Hi <script>alert(1)</script><img src=x onerror="alert(2)">'
    post_webhook("pull_request", payload)
    process_delivery(WebhookDelivery.objects.get().pk)
    html = Reference.objects.get().body_html
    assert "<script" not in html and "onerror" not in html
    assert json.loads(bytes(WebhookDelivery.objects.get().body))["pull_request"]["body"].startswith("Hi <script>")


@pytest.mark.parametrize("event, name, lookups", [("pull_request", "pull_request.opened", 2),
                                                  ("issues", "issues.opened", 2), ("release", "release.published", 1)])
def test_two_deliveries_racing_to_create_one_reference_both_succeed(tracked, monkeypatch, event, name, lookups):
    """Two workers process two deliveries of the same item at once: both looked, found no row, and the second
    INSERT hit the unique key (issue 25's fault run: an IntegrityError, then a retry minutes later). The
    loser runs again against the winner's row, as if the deliveries had come one after the other."""
    from django.db.models import QuerySet

    looked, other_worker = [], []
    real_first = QuerySet.first

    def looked_before_the_other_commit(queryset):
        """Our first attempt's ``lookups`` lookups see no row; the other worker commits its row after the first."""
        if queryset.model is not Reference or other_worker or len(looked) >= lookups:
            return real_first(queryset)
        looked.append(queryset)
        if len(looked) == 1:
            other_worker.append(True)
            process_delivery(WebhookDelivery.objects.create(
                guid="the-other-worker", event=event, body=fixture_body(name), repository_full_name=HELLO_WORLD).pk)
            other_worker.clear()
        return None

    monkeypatch.setattr(QuerySet, "first", looked_before_the_other_commit)
    delivery = WebhookDelivery.objects.create(guid="racing", event=event, body=fixture_body(name),
                                              repository_full_name=HELLO_WORLD)
    process_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == "processed", delivery.detail
    assert set(WebhookDelivery.objects.values_list("state", flat=True)) == {"processed"}
    assert Reference.objects.count() == 1
