"""A published model-drafted digest says so: one line an editor can change, on its page, feed entry and API.

A real local model server (pytest-httpserver) writes the draft; the page, the Atom and RSS feeds
and the API are read through the test client, as readers get them.
"""
import datetime

import pytest
from django.utils import timezone

from digests.models import Digest
from ingestion.drafting import draft_digest
from ingestion.drafting_writer import DISCLOSURE
from ingestion.models import DigestDraft
from publishing.workflow import Status

from .drafting_day import DAY, GOOD, make_day
from .model_server import answer, model_server, waits  # noqa: F401

pytestmark = pytest.mark.django_db

SHOWN = "Drafted by RepoJournal from the day&#x27;s merged pull requests and reviewed by an editor."


def publish(digest: Digest) -> Digest:
    digest.status, digest.published_at = Status.PUBLISHED, timezone.now() - datetime.timedelta(minutes=1)
    digest.save()
    return Digest.objects.get(pk=digest.pk)


def reader_views(client, digest: Digest) -> dict[str, str]:
    """The page, the Wire's Atom and RSS entries and the API's detail, as text."""
    return {
        "page": client.get(digest.get_absolute_url()).content.decode(),
        "atom": client.get("/wire/feed.atom").content.decode(),
        "rss": client.get("/wire/feed.rss").content.decode(),
        "api": client.get(f"/api/v1/digests/{digest.slug}").content.decode(),
    }


def test_a_model_drafted_published_digest_says_so_on_its_page_feed_and_api(model_server, client):
    answer(model_server, GOOD)
    result = draft_digest(make_day(), DAY)
    assert DigestDraft.objects.get(digest=result.digest).writer == DigestDraft.Writer.MODEL
    digest = publish(result.digest)
    assert digest.disclosure == DISCLOSURE
    shown = reader_views(client, digest)
    assert f'<p class="disclosure"><strong>Disclosure.</strong> {SHOWN}</p>' in shown["page"]
    assert "&lt;p&gt;&lt;em&gt;Drafted by RepoJournal from the day&amp;#x27;s" in shown["atom"]  # html content, escaped
    assert "&lt;p&gt;&lt;em&gt;Drafted by RepoJournal" in shown["rss"]
    assert client.get(f"/api/v1/digests/{digest.slug}").json()["disclosure"] == DISCLOSURE


def test_a_rule_based_draft_has_no_disclosure(settings, client):
    settings.DRAFTING_MODEL_URL = ""
    digest = publish(draft_digest(make_day(), DAY).digest)
    assert digest.disclosure == ""
    shown = reader_views(client, digest)
    assert 'class="disclosure"' not in shown["page"] and "Drafted by RepoJournal" not in shown["atom"]
    assert client.get(f"/api/v1/digests/{digest.slug}").json()["disclosure"] == ""


def test_a_model_fallback_leaves_the_line_blank(model_server):
    for _ in range(3):
        answer(model_server, "not json")
    result = draft_digest(make_day(), DAY)
    assert DigestDraft.objects.get(digest=result.digest).writer == DigestDraft.Writer.FALLBACK
    assert Digest.objects.get(pk=result.digest.pk).disclosure == ""


def test_an_editors_own_line_is_kept_on_redraft(model_server):
    answer(model_server, GOOD)
    topic = make_day()
    digest = draft_digest(topic, DAY).digest
    Digest.objects.filter(pk=digest.pk).update(disclosure="Written with a model; checked by Ada.")
    result = draft_digest(topic, DAY)  # the same request: the stored answer, the model writer again
    assert DigestDraft.objects.get(digest=result.digest).writer == DigestDraft.Writer.MODEL
    assert Digest.objects.get(pk=digest.pk).disclosure == "Written with a model; checked by Ada."


def test_a_hostile_line_is_escaped_everywhere(model_server, client):
    answer(model_server, GOOD)
    digest = draft_digest(make_day(), DAY).digest
    digest.disclosure = '<script>alert("x")</script><a href="https://evil.test">more</a>'
    digest = publish(digest)
    shown = reader_views(client, digest)
    assert "<script>alert" not in shown["page"] and 'href="https://evil.test"' not in shown["page"]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in shown["page"]
    # The feed's content is HTML inside XML: the editor's text is escaped once for HTML, then for XML.
    assert "&amp;lt;script&amp;gt;" in shown["atom"] and "&lt;script&gt;" not in shown["atom"]
    assert "&amp;lt;script&amp;gt;" in shown["rss"]
    assert client.get(f"/api/v1/digests/{digest.slug}").json()["disclosure"] == digest.disclosure  # JSON, as typed


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_editors_and_publishers_change_the_line_in_the_digest_admin(model_server, client, request, role):
    answer(model_server, GOOD)
    digest = draft_digest(make_day(), DAY).digest
    client.force_login(request.getfixturevalue(role))
    page = client.get(f"/admin/digests/digest/{digest.pk}/change/").content.decode()
    assert 'name="disclosure"' in page and "Drafted by RepoJournal from the day&#x27;s merged" in page
    assert "the model writer fills it if blank" in page
