"""The manage page (signed link, CSRF-checked forms) and the one-click List-Unsubscribe POST (RFC 8058)."""
import re

import pytest
from django.test import Client
from django.utils import timezone

from newsletters import links
from newsletters.models import Delivery, Message, Subscriber, Subscription, Suppression

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(db):
    subscriber = Subscriber.objects.create(email="reader@example.org", state=Subscriber.State.CONFIRMED,
                                           confirmed_at=timezone.now(), confirm_key="")
    for kind, target in (("wire", ""), ("tag", "cuda")):
        Subscription.objects.create(subscriber=subscriber, kind=kind, target=target, confirmed_at=timezone.now())
    return subscriber


def path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


@pytest.fixture
def csrf_client():
    return Client(enforce_csrf_checks=True)


def token_of(response) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode())[1]


def test_the_manage_page_lists_follows_and_is_private(client, reader):
    page = client.get(path(links.manage_url(reader)))
    html = page.content.decode()
    assert page.status_code == 200 and "reader@example.org" in html
    assert "The Wire" in html and "posts tagged cuda" in html
    assert "no-store" in page["Cache-Control"] and "private" in page["Cache-Control"]
    assert page["Referrer-Policy"] == "no-referrer" and "noindex" in page["X-Robots-Tag"]
    assert "Surrogate-Key" not in page


def test_changing_a_cadence_needs_the_csrf_token(csrf_client, reader):
    url = path(links.manage_url(reader))
    follow = reader.subscriptions.get(kind="tag")
    data = {"action": "save", "subscription": follow.pk, f"s{follow.pk}-cadence": "daily", f"s{follow.pk}-daily_at": "18:15"}
    assert csrf_client.post(url, data).status_code == 403
    saved = csrf_client.post(url, {**data, "csrfmiddlewaretoken": token_of(csrf_client.get(url))})
    assert saved.status_code == 200 and b"Saved: posts tagged cuda" in saved.content
    follow.refresh_from_db()
    assert (follow.cadence, follow.daily_at.strftime("%H:%M")) == ("daily", "18:15")


@pytest.mark.parametrize(("data", "problem"), [
    ({"action": "save", "subscription": "FOLLOW", "PREFIX-cadence": "daily", "PREFIX-daily_at": "25:99"}, b"Enter a valid time."),
    ({"action": "save", "subscription": "FOLLOW", "PREFIX-cadence": "weekly", "PREFIX-daily_at": "08:00"}, b"Select a valid choice"),
    ({"action": "remove", "subscription": "OTHER"}, b"That subscription is not yours or is gone."),
    ({"action": "remove", "subscription": "x1"}, b"That subscription is not yours or is gone."),
    ({"action": "explode"}, b"Unknown action."),
])
def test_bad_manage_posts_are_400s(client, reader, data, problem):
    follow = reader.subscriptions.get(kind="tag")
    stranger = Subscriber.objects.create(email="other@example.org")
    theirs = Subscription.objects.create(subscriber=stranger, kind="blog")
    filled = {key.replace("PREFIX", f"s{follow.pk}"): str(value).replace("FOLLOW", str(follow.pk)).replace("OTHER", str(theirs.pk))
              for key, value in data.items()}
    answer = client.post(path(links.manage_url(reader)), filled)
    assert answer.status_code == 400 and problem in answer.content
    assert Subscription.objects.filter(pk=theirs.pk).exists()
    follow.refresh_from_db()
    assert follow.cadence == "immediate"


def test_removing_one_follow_keeps_the_others(client, reader):
    follow = reader.subscriptions.get(kind="tag")
    answer = client.post(path(links.manage_url(reader)), {"action": "remove", "subscription": follow.pk})
    assert answer.status_code == 200 and b"You no longer follow posts tagged cuda" in answer.content
    assert list(reader.subscriptions.values_list("kind", flat=True)) == ["wire"]


def test_unsubscribe_from_everything_on_the_manage_page(client, reader):
    answer = client.post(path(links.manage_url(reader)), {"action": "unsubscribe"})
    reader.refresh_from_db()
    assert answer.status_code == 200 and reader.state == Subscriber.State.UNSUBSCRIBED and reader.unsubscribed_at
    assert not reader.subscriptions.exists()


def test_delete_my_data_removes_the_rows_and_keeps_suppressions(client, reader):
    message = Message.objects.create(subject="A digest", url="https://example.org/wire/a/")
    Delivery.objects.create(message=message, subscriber=reader, email=reader.email, state=Delivery.State.SENT)
    Suppression.objects.create(email="reader@example.org", reason="complained")
    url = path(links.manage_url(reader))
    answer = client.post(url, {"action": "delete"})
    assert answer.status_code == 200 and b"Your data is deleted" in answer.content
    assert not Subscriber.objects.exists() and not Subscription.objects.exists() and not Delivery.objects.exists()
    assert Suppression.objects.filter(email="reader@example.org").exists()
    assert client.get(url).status_code == 410


def test_one_click_unsubscribe_needs_no_cookie_or_csrf_token(csrf_client, reader):
    """What a mail client sends for List-Unsubscribe-Post: a bare POST, no cookie, no token."""
    url = path(links.unsubscribe_url(reader))
    assert not csrf_client.cookies
    answer = csrf_client.post(url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    reader.refresh_from_db()
    assert answer.status_code == 200 and b"You are unsubscribed" in answer.content
    assert reader.state == Subscriber.State.UNSUBSCRIBED and not reader.subscriptions.exists()
    assert "no-store" in answer["Cache-Control"] and not answer.cookies


def test_the_unsubscribe_get_only_shows_a_button(client, reader):
    page = client.get(path(links.unsubscribe_url(reader)))
    reader.refresh_from_db()
    assert page.status_code == 200 and b"<button" in page.content and reader.state == Subscriber.State.CONFIRMED


@pytest.mark.parametrize("url", [
    "/newsletters/unsubscribe/forged/", "/newsletters/manage/forged/",
    "/newsletters/manage/WzEsImFiYyJd:forgedsignature/", "/newsletters/confirm/forged/",
])
def test_bad_tokens_are_400s(client, reader, url):
    assert client.get(url).status_code == 400
    assert client.post(url).status_code == 400
    reader.refresh_from_db()
    assert reader.state == Subscriber.State.CONFIRMED


def test_the_manage_page_costs_the_same_queries_for_3_or_30_follows(client, reader):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path(links.manage_url(reader))).status_code == 200
        return len(queries)

    Subscription.objects.create(subscriber=reader, kind="blog")
    few = count()
    for n in range(27):
        Subscription.objects.create(subscriber=reader, kind="author", target=f"author-{n}")
    assert count() == few
