"""Issue 27's "done when", end to end through a real SMTP server: a reader subscribes to a tag from its
page, confirms, gets the next post with that tag once, unsubscribes with their mail client's one-click
POST and gets nothing more."""
import re

import pytest
from django.test import Client

from blog.factories import PostFactory
from newsletters import confirmations, fanout, sending, tasks
from newsletters.models import Subscriber

pytestmark = pytest.mark.django_db
CONFIRM = re.compile(r"https?://[^/\s]+(/newsletters/confirm/[^/\s\"<]+/)")


def run_worker() -> None:
    """What the workers do after a publish (the task chain's domain code, on both test passes)."""
    fanout.mail_published()
    sending.send_due()


@pytest.fixture
def inline_confirmations(monkeypatch):
    monkeypatch.setattr(tasks.send_confirmation, "apply_async", lambda args, **options: confirmations.send(*args))


def sign_up_on(client, path: str, email: str, django_capture_on_commit_callbacks):
    page = client.get(path).content.decode()
    form = re.search(r'<form class="subscribe"[^>]*>(.*?)</form>', page, re.S)[1]
    data = {"email": email, "website": "", "cadence": "immediate",
            "follow": re.search(r'name="follow" value="([^"]+)"', form)[1]}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/newsletters/subscribe/", data).status_code == 200
    return data["follow"]


def test_subscribe_to_a_tag_confirm_get_the_next_post_once_unsubscribe_by_one_click_post(
    client, smtp_server, inline_confirmations, django_capture_on_commit_callbacks,
):
    PostFactory(tags=["cuda"], title="An older post")  # the tag's page exists; this post predates the reader
    assert sign_up_on(client, "/tags/cuda/", "reader@example.org", django_capture_on_commit_callbacks) == "tag:cuda"
    [confirmation] = smtp_server.to("reader@example.org")
    client.post(CONFIRM.search(confirmation.get_body(("plain",)).get_content())[1])
    assert Subscriber.objects.get().state == Subscriber.State.CONFIRMED

    PostFactory(tags=["cuda"], title="Kernels got faster")
    PostFactory(tags=["rust"], title="Not followed")
    run_worker()
    run_worker()  # a second sweep sends nothing more
    mails = smtp_server.to("reader@example.org")[1:]
    assert [mail["Subject"] for mail in mails] == ["Kernels got faster"]  # not the older post, once

    header = mails[0]["List-Unsubscribe"]
    assert mails[0]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    unsubscribe = re.search(r"<https?://[^/>]+(/newsletters/unsubscribe/[^>]+)>", header)[1]
    mail_client = Client(enforce_csrf_checks=True)  # no cookie, no CSRF token: what a mail client sends
    answer = mail_client.post(unsubscribe, "List-Unsubscribe=One-Click",
                              content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 200 and not answer.cookies
    assert Subscriber.objects.get().state == Subscriber.State.UNSUBSCRIBED

    PostFactory(tags=["cuda"], title="Yet another cuda post")
    run_worker()
    assert [mail["Subject"] for mail in smtp_server.to("reader@example.org")[1:]] == ["Kernels got faster"]
