"""Fan-out: one delivery per following subscriber, whatever number of their subscriptions match."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest
from newsletters import fanout, sending
from newsletters.models import Delivery, Message, Subscriber, Suppression

from .delivery_factories import subscriber

pytestmark = pytest.mark.django_db


def published_digest(**fields):
    """A digest of topic "rust" citing a reference of owner/tool (so it belongs to that repository)."""
    topic = TopicFactory(slug="rust", name="Rust")
    digest = DigestFactory(topic=topic, summary="Shipped [1].", **fields)
    DigestReferenceFactory(digest=digest, number=1, reference__repository=RepositoryFactory(full_name="owner/tool"))
    Digest.objects.filter(pk=digest.pk).refresh_rendered()
    return digest


def test_three_matching_subscriptions_make_one_email(smtp_server):
    subscriber("many@example.com", ("wire", ""), ("topic", "rust"), ("repository", "owner/tool"))
    subscriber("topic@example.com", ("topic", "rust"))
    subscriber("other@example.com", ("topic", "go"))
    digest = published_digest()
    assert fanout.mail_published() == 1
    assert sending.send_due() == 2
    assert len(smtp_server.to("many@example.com")) == 1
    assert len(smtp_server.to("topic@example.com")) == 1
    assert smtp_server.to("other@example.com") == []
    message = Message.objects.get(digest=digest)
    assert message.fanned_out_at is not None and message.subject == digest.headline
    assert fanout.mail_published() == 0  # fanned out once
    assert sending.send_due() == 0 and len(smtp_server.messages) == 2


def test_unconfirmed_unsubscribed_suppressed_and_unconfirmed_follows_get_nothing(smtp_server):
    subscriber("pending@example.com", ("wire", ""), state=Subscriber.State.PENDING)
    subscriber("gone@example.com", ("wire", ""), state=Subscriber.State.UNSUBSCRIBED)
    subscriber("bounced@example.com", ("wire", ""))
    subscriber("notyet@example.com", ("wire", ""), confirmed=False)
    # As a provider reported the bounce: the same address in another case.
    Suppression.objects.create(email="Bounced@Example.com", reason=Suppression.Reason.BOUNCED)
    subscriber("reader@example.com", ("wire", ""))
    published_digest()
    fanout.mail_published()
    sending.send_due()
    assert [received.rcpt_tos for received in smtp_server.received] == [["reader@example.com"]]
    assert Delivery.objects.count() == 1


def test_a_post_reaches_blog_tag_and_author_followers_once(smtp_server):
    author = AuthorFactory(slug="ada")
    subscriber("tag@example.com", ("tag", "django"), ("author", "ada"), ("blog", ""))
    subscriber("author@example.com", ("author", "ada"))
    subscriber("other-tag@example.com", ("tag", "rust"))
    subscriber("wire@example.com", ("wire", ""))
    PostFactory(authors=[author], tags=["django"])
    fanout.mail_published()
    sending.send_due()
    assert sorted(item.rcpt_tos[0] for item in smtp_server.received) == ["author@example.com", "tag@example.com"]


def test_a_scheduled_item_is_mailed_when_its_time_comes_not_before(smtp_server):
    subscriber("reader@example.com", ("wire", ""))
    digest = published_digest(published_at=timezone.now() + datetime.timedelta(hours=1))
    assert fanout.mail_published() == 0 and not Message.objects.exists()
    Digest.objects.filter(pk=digest.pk).update(published_at=timezone.now() - datetime.timedelta(seconds=1))
    assert fanout.mail_published() == 1  # what the beat sweep runs
    sending.send_due()
    assert len(smtp_server.to("reader@example.com")) == 1


def test_items_older_than_the_lookback_are_never_mailed(settings):
    settings.NEWSLETTERS_LOOKBACK_HOURS = 2
    subscriber("reader@example.com", ("wire", ""))
    published_digest(published_at=timezone.now() - datetime.timedelta(hours=3))
    assert fanout.mail_published() == 0


def test_a_fan_out_cut_short_is_resumed_without_duplicates():
    subscriber("a@example.com", ("wire", ""))
    subscriber("b@example.com", ("wire", ""))
    digest = published_digest()
    message = fanout.message_for(digest=digest, subject=digest.headline, path=digest.get_absolute_url())
    Delivery.objects.create(message=message, subscriber=Subscriber.objects.get(email="a@example.com"),
                            email="a@example.com")  # a worker died after writing part of it
    assert fanout.message_for(digest=digest, subject="again", path="/") == message  # the unique row wins
    assert fanout.mail_published() == 1
    assert sorted(Delivery.objects.values_list("email", flat=True)) == ["a@example.com", "b@example.com"]


def fan_out_queries(count: int) -> int:
    for number in range(count):
        subscriber(f"reader{count}-{number}@example.com", ("wire", ""), ("topic", "rust"))
    digest = published_digest()
    with CaptureQueriesContext(connection) as queries:
        fanout.mail_published()
    assert Delivery.objects.filter(message__digest=digest).count() == Subscriber.objects.count()
    Message.objects.all().delete()
    Digest.objects.filter(pk=digest.pk).delete()
    return len(queries)


def test_fan_out_queries_do_not_grow_with_subscribers():
    assert fan_out_queries(3) == fan_out_queries(30)


def test_daily_followers_are_held_until_their_earliest_time(settings):
    settings.NEWSLETTERS_TIME_ZONE = "UTC"
    now = timezone.now()
    later = (now + datetime.timedelta(hours=2)).time().replace(second=0, microsecond=0)
    earlier = (now - datetime.timedelta(hours=2)).time().replace(second=0, microsecond=0)
    daily = subscriber("daily@example.com", ("wire", ""), cadence="daily", daily_at=earlier)
    daily.subscriptions.create(kind="topic", target="rust", cadence="daily", daily_at=later, confirmed_at=now)
    mixed = subscriber("mixed@example.com", ("wire", ""), cadence="daily", daily_at=later)
    mixed.subscriptions.create(kind="topic", target="rust", cadence="immediate", confirmed_at=now)
    published_digest()
    fanout.mail_published()
    held = Delivery.objects.get(email="daily@example.com")
    assert held.state == Delivery.State.HELD and held.in_summary
    expected = datetime.datetime.combine(now.date(), later, tzinfo=datetime.timezone.utc)
    if later < now.time():  # two hours from now is tomorrow
        expected += datetime.timedelta(days=1)
    assert held.due_at == expected
    assert Delivery.objects.get(email="mixed@example.com").state == Delivery.State.QUEUED


@pytest.fixture
def send_worker(monkeypatch):
    """A stand-in for the worker that takes ``send_message`` (on both passes: no worker reads the test queue)."""
    from newsletters import tasks

    monkeypatch.setattr(tasks.send_message, "apply_async", lambda args, **options: sending.send_due(message_id=args[0]))


def test_a_broker_away_at_publish_costs_the_writer_nothing_and_the_sweep_mails_it(
    smtp_server, monkeypatch, caplog, django_capture_on_commit_callbacks, send_worker,
):
    """Publishing commits whatever the broker says: the fan-out's task is only the fast path (found by the
    Redis fault test: the digest's status POST answered 500 while Redis was stopped)."""
    from kombu.exceptions import OperationalError

    from newsletters import tasks

    def refused(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.mail_published, "apply_async", refused)
    subscriber("reader@example.com", ("wire", ""))
    with django_capture_on_commit_callbacks(execute=True):
        published_digest()
    assert "the sweep will" in caplog.text
    assert Message.objects.count() == 0 and smtp_server.messages == []
    tasks.sweep_newsletters()  # beat, once the broker is back (the sweep fans out itself; it queues only sends)
    assert [received.rcpt_tos for received in smtp_server.received] == [["reader@example.com"]]


def test_send_newsletters_runs_the_sweep_where_there_is_no_beat(smtp_server, send_worker):
    """`make run` has no beat: the command mails a scheduled item whose time came, as the sweep does."""
    from django.core.management import call_command

    subscriber("reader@example.com", ("wire", ""))
    digest = published_digest(published_at=timezone.now() + datetime.timedelta(hours=1))
    call_command("send_newsletters")
    assert smtp_server.messages == []  # not yet
    Digest.objects.filter(pk=digest.pk).update(published_at=timezone.now() - datetime.timedelta(minutes=1))
    call_command("send_newsletters")
    assert [received.rcpt_tos for received in smtp_server.received] == [["reader@example.com"]]
