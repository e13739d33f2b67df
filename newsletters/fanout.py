"""Which subscribers get a published item: one message per item, one delivery per subscriber.

An item is due when it is published (``published()``: a scheduled item becomes due when its time
passes, with no write) within the last NEWSLETTERS_LOOKBACK_HOURS and has no fanned-out message.
Its message is created once whatever number of processes try (the unique constraints decide;
the loser reads the winner's row), then one ``Delivery`` is written per confirmed, unsuppressed
subscriber following anything the item belongs to since before it was published — one, whatever
number of their subscriptions match: queued at once if any of them is "immediate", else held for the
earliest daily summary.

The subscribers are one aggregated query streamed into ``bulk_create(ignore_conflicts=True)``
batches, so a crash half-way is resumed by running again (``fanned_out_at`` is set last), and the
query count does not grow with the subscribers.
"""
import datetime
import zoneinfo

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from blog.models import PostAuthor, Post, TaggedPost
from digests.models import Digest, DigestRepository

from .models import Delivery, Message, Subscriber, Subscription, Suppression

#: Deliveries written per INSERT.
INSERT_BATCH = 2000


def mail_published() -> int:
    """Fan out every item due (see the module's docstring); returns how many messages were fanned out."""
    if not Subscriber.objects.filter(state=Subscriber.State.CONFIRMED).exists():
        return 0  # nobody to mail: the publishing signal stays one cheap query
    since = timezone.now() - datetime.timedelta(hours=settings.NEWSLETTERS_LOOKBACK_HOURS)
    done = Message.objects.filter(is_test=False, fanned_out_at__isnull=False)
    digests = Digest.objects.published().filter(published_at__gte=since).exclude(
        pk__in=done.filter(digest__isnull=False).values("digest_id")).select_related("topic")
    posts = Post.objects.published().filter(published_at__gte=since).exclude(
        pk__in=done.filter(post__isnull=False).values("post_id"))
    count = 0
    for digest in digests:
        fan_out(message_for(digest=digest, subject=digest.headline, path=digest.get_absolute_url()),
                digest_follows(digest), came_out(digest))
        count += 1
    for post in posts:
        fan_out(message_for(post=post, subject=post.title, path=post.get_absolute_url()), post_follows(post),
                came_out(post))
        count += 1
    return count


def came_out(item) -> datetime.datetime:
    """When readers could first see the item: its ``published_at``, or later if it was published after that
    time (backdated: moved to published through the workflow, or created published)."""
    return max(item.published_at, item.status_changed_at or item.created_at)


def message_for(*, subject: str, path: str, **item) -> Message:
    """The item's one message, created here or by whoever got there first (race-free across processes)."""
    try:
        with transaction.atomic():
            return Message.objects.create(subject=subject[:300], url=f"{settings.SITE_URL}{path}", **item)
    except IntegrityError:
        return Message.objects.get(is_test=False, **item)


def digest_follows(digest: Digest) -> models.Q:
    """The Wire, the digest's topic and every repository it cites or names (``DigestRepository``)."""
    repositories = DigestRepository.objects.filter(digest=digest).values_list("repository__full_name", flat=True)
    return (models.Q(kind=Subscription.Kind.WIRE) | models.Q(kind=Subscription.Kind.TOPIC, target=digest.topic.slug)
            | models.Q(kind=Subscription.Kind.REPOSITORY, target__in=list(repositories)))


def post_follows(post: Post) -> models.Q:
    """The blog, each of the post's tags and each of its authors."""
    tags = TaggedPost.objects.filter(content_object=post).values_list("tag__slug", flat=True)
    authors = PostAuthor.objects.filter(post=post).values_list("author__slug", flat=True)
    return (models.Q(kind=Subscription.Kind.BLOG) | models.Q(kind=Subscription.Kind.TAG, target__in=list(tags))
            | models.Q(kind=Subscription.Kind.AUTHOR, target__in=list(authors)))


def followers(follows: models.Q, local_now: datetime.datetime, published_at: datetime.datetime):
    """One row per confirmed, unsuppressed subscriber with a matching subscription confirmed by the time the
    item was published (double opt-in: a follow added later is confirmed from the inbox too; and one
    confirmed after the item came out does not get it: a new subscriber is not sent the last day's items,
    whenever the fan-out runs): whether any is immediate, and their earliest daily time still to come
    today and earliest overall."""
    daily = models.Q(cadence=Subscription.Cadence.DAILY)
    return (
        Subscription.objects.filter(follows, confirmed_at__lte=published_at,
                                    subscriber__state=Subscriber.State.CONFIRMED)
        .alias(email_lower=Lower("subscriber__email"))
        .exclude(email_lower__in=Suppression.objects.annotate(address=Lower("email")).values("address"))
        .values("subscriber_id").order_by("subscriber_id")
        .annotate(
            email=models.Max("subscriber__email"),
            immediate=models.Count("pk", filter=models.Q(cadence=Subscription.Cadence.IMMEDIATE)),
            later_today=models.Min("daily_at", filter=daily & models.Q(daily_at__gt=local_now.time())),
            first=models.Min("daily_at", filter=daily),
        )
        .values_list("subscriber_id", "email", "immediate", "later_today", "first")
    )


def fan_out(message: Message, follows: models.Q, published_at: datetime.datetime) -> int:
    """Write the message's deliveries to whoever followed it when it came out (``published_at``), again,
    harmlessly, after a crash; ``tasks`` queues the sending."""
    if message.fanned_out_at is not None:
        return 0
    now = timezone.now()
    local_now = now.astimezone(zoneinfo.ZoneInfo(settings.NEWSLETTERS_TIME_ZONE))
    written, batch = 0, []
    for row in followers(follows, local_now, published_at).iterator(chunk_size=INSERT_BATCH):
        batch.append(delivery(message, row, now, local_now))
        if len(batch) >= INSERT_BATCH:
            written += _insert(batch)
            batch = []
    written += _insert(batch)
    Message.objects.filter(pk=message.pk).update(fanned_out_at=timezone.now())
    return written


def delivery(message: Message, row: tuple, now, local_now) -> Delivery:
    subscriber_id, email, immediate, later_today, first = row
    if immediate:
        return Delivery(message=message, subscriber_id=subscriber_id, email=email, due_at=now, next_attempt_at=now)
    day = local_now.date() if later_today else local_now.date() + datetime.timedelta(days=1)
    due = datetime.datetime.combine(day, later_today or first, tzinfo=local_now.tzinfo)
    return Delivery(message=message, subscriber_id=subscriber_id, email=email, state=Delivery.State.HELD,
                    in_summary=True, due_at=due, next_attempt_at=due)


def _insert(batch: list[Delivery]) -> int:
    if batch:
        Delivery.objects.bulk_create(batch, batch_size=INSERT_BATCH, ignore_conflicts=True)
    return len(batch)
