"""The editors' side: subscribers, suppressions and messages in the admin, and "send a test to me"."""
import itertools

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from blog.factories import PostFactory
from digests.factories import DigestFactory
from newsletters.models import Delivery, Message, Subscriber, Subscription, Suppression
from publishing.workflow import Status

pytestmark = pytest.mark.django_db
_serial = itertools.count()

SUBSCRIBERS = reverse("admin:newsletters_subscriber_changelist")
MESSAGES = reverse("admin:newsletters_message_changelist")


def subscriber(email=None, **fields) -> Subscriber:
    person = Subscriber.objects.create(email=email or f"reader{next(_serial)}@example.org", **fields)
    Subscription.objects.create(subscriber=person, kind="wire")
    Subscription.objects.create(subscriber=person, kind="tag", target="python")
    return person


def message_with(states: dict[str, int], **fields) -> Message:
    """A message with `states[state]` deliveries in each state (each to its own subscriber)."""
    message = Message.objects.create(subject=fields.pop("subject", f"Issue {next(_serial)}"),
                                     url="https://example.org/x", **fields)
    Delivery.objects.bulk_create([
        Delivery(message=message, subscriber=subscriber(), email=f"d{next(_serial)}@example.org", state=state,
                 last_error=f"550 no such user {n}" if state == "failed" else "")
        for state, count in states.items() for n in range(count)])
    return message


def queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


def test_every_page_opens_for_a_superuser(admin_client):
    person = subscriber()
    message = message_with({"sent": 1})
    Suppression.objects.create(email="gone@example.org", reason="bounced")
    for url in [SUBSCRIBERS, reverse("admin:newsletters_subscriber_change", args=[person.pk]),
                reverse("admin:newsletters_subscriber_import"), reverse("admin:newsletters_suppression_changelist"),
                reverse("admin:newsletters_suppression_add"), MESSAGES,
                reverse("admin:newsletters_message_change", args=[message.pk])]:
        assert admin_client.get(url).status_code == 200, url


def test_editors_see_the_messages_progress_not_the_subscribers(client, editor):
    """Editors write: they follow how what they wrote went out, without seeing who it went to."""
    message = message_with({"sent": 2, "failed": 1})
    client.force_login(editor)
    for url in [SUBSCRIBERS, reverse("admin:newsletters_subscriber_import"),
                reverse("admin:newsletters_subscriber_export"), reverse("admin:newsletters_suppression_changelist"),
                reverse("admin:newsletters_subscriber_change", args=[message.deliveries.first().subscriber_id])]:
        assert client.get(url).status_code == 403, url
    assert b"newsletters/subscriber" not in client.get(reverse("admin:model_list")).content
    assert client.get(MESSAGES).status_code == 200
    page = client.get(reverse("admin:newsletters_message_change", args=[message.pk])).content.decode()
    assert "failed deliveries" not in page and "@example.org" not in page and "550 no such user" not in page
    assert "Issue" in page


def test_publishers_keep_the_list(client, publisher):
    """Publishers answer for what is mailed: the list, its import and export, and suppressions by hand;
    lifting a suppression is left to superusers."""
    person = subscriber("ada@example.org")
    message = message_with({"failed": 1})
    gone = Suppression.objects.create(email="gone@example.org", reason="bounced")
    client.force_login(publisher)
    for url in [SUBSCRIBERS, reverse("admin:newsletters_subscriber_change", args=[person.pk]),
                reverse("admin:newsletters_subscriber_import"), reverse("admin:newsletters_subscriber_export"),
                reverse("admin:newsletters_suppression_changelist"), reverse("admin:newsletters_suppression_add"),
                MESSAGES]:
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("admin:newsletters_message_change", args=[message.pk])).content.decode()
    assert "550 no such user" in page
    added = client.post(reverse("admin:newsletters_suppression_add"), {"email": "No@Example.org", "detail": "asked"})
    assert added.status_code == 302 and Suppression.objects.filter(email="No@example.org", reason="manual").exists()
    assert client.get(reverse("admin:newsletters_suppression_delete", args=[gone.pk])).status_code == 403
    erased = client.post(reverse("admin:newsletters_subscriber_delete", args=[person.pk]), {"post": "yes"})
    assert erased.status_code == 302 and not Subscriber.objects.filter(pk=person.pk).exists()


def test_the_grant_is_idempotent_and_reversible(db):
    """Applying it twice changes nothing, unapplying takes back only its own, and what else the groups hold stays."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.auth.models import Group

    migration = import_module("newsletters.migrations.0006_editorial_permissions")

    def held(name):
        return set(Group.objects.get(name=name).permissions.values_list("codename", flat=True))

    editors, publishers = held("Editors"), held("Publishers")
    assert {"view_message"} <= editors and not editors & {"view_subscriber", "add_subscriber"}
    assert set(migration.PUBLISHERS) <= publishers and "delete_suppression" not in publishers
    migration.grant(apps, None)
    assert (held("Editors"), held("Publishers")) == (editors, publishers)
    migration.revoke(apps, None)
    assert held("Editors") == editors - {"view_message"} and "change_post" in held("Editors")
    assert not held("Publishers") & set(migration.PUBLISHERS) and "publish_post" in held("Publishers")
    migration.grant(apps, None)
    assert (held("Editors"), held("Publishers")) == (editors, publishers)


def test_view_permission_shows_the_list_but_not_the_import(client, editor):
    editor.user_permissions.add(Permission.objects.get(codename="view_subscriber"))
    client.force_login(editor)
    assert client.get(SUBSCRIBERS).status_code == 200
    assert client.get(reverse("admin:newsletters_subscriber_import")).status_code == 403


def test_a_subscribers_page_shows_their_subscriptions_never_their_keys(admin_client):
    person = subscriber(state="confirmed")
    page = admin_client.get(reverse("admin:newsletters_subscriber_change", args=[person.pk])).content.decode()
    assert "python" in page and person.email in page
    assert person.manage_key not in page and person.confirm_key not in page


def test_search_finds_an_address_by_its_beginning(admin_client):
    subscriber("ada@example.org"), subscriber("adam@example.org"), subscriber("bob@example.org")
    found = admin_client.get(SUBSCRIBERS, {"q": "ada"}).context["cl"].result_list
    assert sorted(person.email for person in found) == ["ada@example.org", "adam@example.org"]
    found = admin_client.get(SUBSCRIBERS, {"q": "BOB@Example.org"}).context["cl"].result_list
    assert [person.email for person in found] == ["bob@example.org"]  # as typed, or lower-cased
    assert not admin_client.get(SUBSCRIBERS, {"q": "example.org"}).context["cl"].result_list  # no substrings


def test_the_list_filters_by_state_and_consent(admin_client):
    subscriber(state="confirmed", consent="imported_consent"), subscriber(state="pending")
    listed = admin_client.get(SUBSCRIBERS, {"state__exact": "confirmed", "consent__exact": "imported_consent"})
    assert [person.state for person in listed.context["cl"].result_list] == ["confirmed"]


def test_the_subscriber_list_costs_the_same_for_3_rows_and_for_30(admin_client):
    for _ in range(3):
        subscriber()
    few = queries(admin_client, SUBSCRIBERS)
    for _ in range(27):
        subscriber()
    response = admin_client.get(SUBSCRIBERS)
    assert [person.subscription_total for person in response.context["cl"].result_list] == [2] * 30
    assert queries(admin_client, SUBSCRIBERS) == few


def test_messages_show_their_progress_by_state(admin_client):
    message = message_with({"queued": 3, "sending": 1, "sent": 5, "failed": 2, "bounced": 1, "suppressed": 1})
    listed = admin_client.get(MESSAGES).context["cl"].result_list
    row = next(found for found in listed if found.pk == message.pk)
    assert (row.queued_count, row.sending_count, row.sent_count, row.failed_count, row.bounced_count,
            row.held_count, row.suppressed_count, row.total_count) == (3, 1, 5, 2, 1, 0, 1, 13)
    page = admin_client.get(reverse("admin:newsletters_message_change", args=[message.pk])).content.decode()
    assert "550 no such user 0" in page and "550 no such user 1" in page
    assert "<th scope=\"row\">total</th><td>13</td>" in page


def test_a_send_is_followed_by_reloading(admin_client):
    message = message_with({"queued": 2})
    url = reverse("admin:newsletters_message_change", args=[message.pk])
    assert admin_client.get(url).context["original"].queued_count == 2
    Delivery.objects.filter(message=message).update(state="sent")
    reloaded = admin_client.get(url).context["original"]
    assert (reloaded.queued_count, reloaded.sent_count) == (0, 2)


def test_the_message_list_costs_the_same_for_3_rows_and_for_30(admin_client):
    for _ in range(3):
        message_with({"sent": 2, "failed": 1}, post=PostFactory())
    few = queries(admin_client, MESSAGES)
    for _ in range(27):
        message_with({"sent": 2, "failed": 1}, digest=DigestFactory())
    assert queries(admin_client, MESSAGES) == few


def test_messages_are_read_only(admin_client):
    message = message_with({"sent": 1})
    assert admin_client.post(reverse("admin:newsletters_message_delete", args=[message.pk])).status_code == 403
    assert admin_client.get(reverse("admin:newsletters_message_add")).status_code == 403


def test_an_editor_suppresses_an_address_by_hand(admin_client):
    response = admin_client.post(reverse("admin:newsletters_suppression_add"),
                                 {"email": "Someone@EXAMPLE.org", "detail": "asked by phone"})
    assert response.status_code == 302
    suppression = Suppression.objects.get()
    assert (suppression.email, suppression.reason) == ("Someone@example.org", "manual")
    response = admin_client.post(reverse("admin:newsletters_suppression_delete", args=[suppression.pk]),
                                 {"post": "yes"})
    assert response.status_code == 302 and not Suppression.objects.exists()


@pytest.fixture
def chief(admin_user):
    admin_user.email = "chief@example.org"
    admin_user.save()
    return admin_user


def test_send_a_test_of_a_post_to_me(client, chief, smtp_server):
    post = PostFactory(title="Hello, newsletters", status=Status.DRAFT, published_at=None)
    client.force_login(chief)
    url = f"{reverse('admin:newsletters_message_send_test')}?post={post.pk}"
    assert "chief@example.org" in client.get(url).content.decode()
    assert not smtp_server.messages  # GET only asks
    response = client.post(url)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:blog_post_change", args=[post.pk])
    received = smtp_server.to("chief@example.org")
    assert len(received) == 1 and received[0]["Subject"] == "Hello, newsletters"
    message = Message.objects.get()
    assert message.is_test and message.post == post and message.requested_by == chief
    assert message.deliveries.get().state == "sent"


def test_send_a_test_of_digests_from_their_list(client, chief, smtp_server):
    digest = DigestFactory(headline="The Wire, today")
    client.force_login(chief)
    response = client.post(reverse("admin:digests_digest_changelist"),
                           {"action": "send_test_to_me", "_selected_action": [digest.pk]})
    assert response.status_code == 302
    assert [m["Subject"] for m in smtp_server.to("chief@example.org")] == ["The Wire, today"]


def test_a_post_page_links_to_the_test_send(admin_client):
    post = PostFactory()
    page = admin_client.get(reverse("admin:blog_post_change", args=[post.pk])).content.decode()
    assert f"{reverse('admin:newsletters_message_send_test')}?post={post.pk}" in page


def test_no_address_no_test(admin_client, admin_user, smtp_server):
    admin_user.email = ""
    admin_user.save()
    post = PostFactory()
    response = admin_client.post(f"{reverse('admin:newsletters_message_send_test')}?post={post.pk}", follow=True)
    assert "has no email address" in response.content.decode()
    assert not smtp_server.messages and not Message.objects.exists()


def test_test_send_asks_for_a_post_or_digest_the_user_may_see(client, admin_client, editor, django_user_model):
    """Whoever may see the item in the admin may mail it to themselves (an Editor checking a draft)."""
    url, post = reverse("admin:newsletters_message_send_test"), PostFactory()
    assert admin_client.get(url).status_code == 404
    assert admin_client.get(f"{url}?post=abc").status_code == 404
    assert admin_client.get(f"{url}?post=999999").status_code == 404
    client.force_login(editor)
    assert client.get(f"{url}?post={post.pk}").status_code == 200
    client.force_login(django_user_model.objects.create_user("clerk", is_staff=True))
    assert client.get(f"{url}?post={post.pk}").status_code == 403
