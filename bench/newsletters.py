"""Newsletters (issue 27): one digest mailed to N subscribers, against the SMTP server's ceiling.

Why: the issue's target is sending at no less than 0.6× what the SMTP server itself can take, with
every email personalised (its own unsubscribe link) and the worker's memory flat, so a send to
100,000 subscribers neither crawls nor grows until it is killed.

How: one SMTP server (bench/smtp_sink.py: aiosmtpd in a process of its own, counting per recipient)
receives both loops:

- the ceiling: a bare ``smtplib`` loop on one connection sending one prebuilt email -- the real
  composer's bytes for the first subscriber -- CEILING_MESSAGES times (or CEILING_SECONDS), before
  the send and again after it; the better of the two is the ceiling (this machine is shared: the worse of
  two is more likely a neighbour's doing than the server's);
- ours: N confirmed subscribers following a topic (bulk-created), a copy of the archive's latest
  digest published in that topic, ``newsletters.fanout.mail_published()`` timed in this process
  (the fan-out), then the send queued as the ``mail_published`` task queues it (``tasks.queue_owed``); a
  real Celery worker (``celery -A repojournal worker``, one
  pool process: the one send task is sent by one process, as the ceiling is one loop) on the bench's
  Redis sends it as production does (``newsletters.sending.send_due``: batches of
  NEWSLETTERS_BATCH_SIZE over pooled SMTP connections). Its rate is messages over the seconds from
  the first to the last message the server received (the ceiling's: from its connection to its last
  message answered).

The worker's memory (VmRSS of the pool process that sends, and of the worker's main process) is
sampled every SAMPLE_EVERY seconds; "flat" compares the mean in the first tenth of the send with the
mean in the last tenth. Every recipient must have received exactly one message, each with its own
List-Unsubscribe URL, and no delivery may be left unsent. Skipped, saying why, without PostgreSQL
and Redis (the worker and this process share the data and the broker).
"""
import contextlib
import datetime
import json
import os
import shutil
import signal
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from blog.models import Post
from digests.models import Digest, DigestReference, Topic
from publishing.workflow import Status

from . import load, smtp_sink

SUBSCRIBERS = 100_000
CEILING_MESSAGES = 20_000
CEILING_SECONDS = 10.0
SAMPLE_EVERY = 0.1
#: A send with no new message at the server for this long has stalled: the phase stops waiting.
STALL_SECONDS = 60.0
TOPIC_SLUG = "bench-newsletters"
DOMAIN = "subscribers.bench.invalid"
INSERT_BATCH = 5_000
RATIO_BAR, MEMORY_TOLERANCE = 0.6, 0.10


def missing() -> str | None:
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql" or not settings.REDIS_URL:
        return "a Celery worker sends over the bench's broker and database: needs PostgreSQL and Redis"
    return None


class Sink:
    """bench/smtp_sink.py on a free port; ``status()`` reads its counts, ``final`` holds them once it stopped."""

    def __init__(self):
        self.directory = Path(tempfile.mkdtemp(prefix="repojournal-bench-smtp-"))
        self.status_file, self.port, self.final = self.directory / "status.json", load.free_port(), None

    def status(self) -> dict | None:
        return json.loads(self.status_file.read_text()) if self.status_file.exists() else None

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-m", "bench.smtp_sink", str(self.port),
                                         str(self.status_file)], cwd=load.PROJECT_DIR)
        wait_for(lambda: self.status() is not None, 30, "the SMTP server did not start")
        return self

    def __exit__(self, *exc):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        self.final = self.status()  # written at exit: every DATA answered is counted
        shutil.rmtree(self.directory, ignore_errors=True)


def wait_for(condition, seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(failure)
        time.sleep(0.1)


def wipe() -> None:
    """Earlier runs' subscribers and messages (raw deletes: 100,000 rows through the ORM's collector take minutes)."""
    from newsletters.models import Delivery, Message, Subscriber, Subscription, Suppression

    for model in (Delivery, Message, Subscription, Suppression, Subscriber):
        model.objects.all()._raw_delete(model.objects.db)


def the_digest() -> Digest:
    """A copy of the archive's latest published digest (its text and citations), published now in a topic
    of its own: what the subscribers follow, and the only item they follow. Bulk-created: no signal
    mails it before the phase fans it out."""
    source = Digest.objects.published().order_by("-published_at").first()
    if source is None:
        raise RuntimeError("no published digest to mail: generate an archive first")
    topic, _ = Topic.objects.get_or_create(slug=TOPIC_SLUG, defaults={"name": "Bench newsletters"})
    Digest.objects.filter(topic=topic).delete()
    citations = list(DigestReference.objects.filter(digest=source))
    now = timezone.now()
    digest = source
    digest.pk = digest.id = None
    digest.topic, digest.date, digest.slug = topic, now.date(), f"{TOPIC_SLUG}-{uuid.uuid4().hex[:8]}"
    digest.status, digest.published_at = Status.PUBLISHED, now - datetime.timedelta(seconds=1)
    [digest] = Digest.objects.bulk_create([digest])
    DigestReference.objects.bulk_create(
        DigestReference(digest=digest, reference_id=c.reference_id, number=c.number) for c in citations)
    Digest.objects.filter(pk=digest.pk).refresh_rendered()
    return digest


def already_mailed(digest: Digest) -> None:
    """The archive's other recently published items count as mailed (a fanned-out message each), so the
    fan-out timed is this digest's alone."""
    from newsletters.models import Message

    now = timezone.now()
    since = now - datetime.timedelta(hours=settings.NEWSLETTERS_LOOKBACK_HOURS)
    recent = lambda model: model.objects.published().filter(published_at__gte=since)  # noqa: E731
    Message.objects.bulk_create(
        [Message(digest=item, subject=item.headline[:300], url=settings.SITE_URL, fanned_out_at=now)
         for item in recent(Digest).exclude(pk=digest.pk)]
        + [Message(post=item, subject=item.title[:300], url=settings.SITE_URL, fanned_out_at=now)
           for item in recent(Post)])


def subscribe(topic: Topic, count: int) -> float:
    """`count` confirmed subscribers, each following `topic`, in INSERT_BATCH inserts; seconds taken."""
    from newsletters.models import Subscriber, Subscription

    # Subscribed before the digest came out (a follow confirmed later does not get it: newsletters.fanout).
    started, now = time.perf_counter(), timezone.now() - datetime.timedelta(days=1)
    for first in range(0, count, INSERT_BATCH):
        with transaction.atomic():
            subscribers = Subscriber.objects.bulk_create(
                Subscriber(email=f"reader{n:06d}@{DOMAIN}", state=Subscriber.State.CONFIRMED, confirmed_at=now,
                           confirm_key="") for n in range(first, min(count, first + INSERT_BATCH)))
            Subscription.objects.bulk_create(
                Subscription(subscriber=s, kind=Subscription.Kind.TOPIC, target=topic.slug, confirmed_at=now)
                for s in subscribers)
    return round(time.perf_counter() - started, 2)


def prebuilt_email(digest: Digest) -> bytes:
    """The first subscriber's email as the real composer writes it: the ceiling sends these bytes."""
    from newsletters import composing
    from newsletters.models import Subscriber

    subscriber = Subscriber.objects.order_by("pk").first()
    shared = composing.render_digest(digest, f"{settings.SITE_URL}{digest.get_absolute_url()}")
    manage, unsubscribe = composing.recipient_links(subscriber.pk, subscriber.manage_key)
    return shared.mime(subscriber.email, shared.message_id(subscriber.pk), manage, unsubscribe)


def ceiling(port: int, message: bytes, status, limit: int) -> dict:
    """The bare smtplib loop: one connection, the same bytes `limit` times (or CEILING_SECONDS); messages over
    the seconds from the connection to the last DATA answered (each answer comes after the server counted it)."""
    before = status()["ceiling"]["messages"]
    deadline = time.monotonic() + CEILING_SECONDS
    client = smtplib.SMTP("127.0.0.1", port)
    sent, started = 0, time.time()
    try:
        while sent < limit and time.monotonic() < deadline:
            client.sendmail(settings.DEFAULT_FROM_EMAIL, [smtp_sink.CEILING_ADDRESS], message)
            sent += 1
        seconds = time.time() - started
    finally:
        client.quit()
    wait_for(lambda: status()["ceiling"]["messages"] >= before + sent, 10, "the ceiling's messages were not counted")
    return {"messages": sent, "seconds": round(seconds, 2), "messages_per_second": round(sent / seconds, 1)}


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as file:
            return next(int(line.split()[1]) for line in file if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class Sampler(threading.Thread):
    """VmRSS of the worker's main process and of its pool process(es), every SAMPLE_EVERY seconds."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stopping = pid, [], threading.Event()

    def run(self):
        while not self.stopping.wait(SAMPLE_EVERY):
            pool = [rss_kib(child) or 0 for child in children(self.pid)]
            self.samples.append((time.time(), rss_kib(self.pid) or 0, sum(pool)))

    def stop(self) -> list[tuple[float, int, int]]:
        self.stopping.set()
        self.join()
        return self.samples


@contextlib.contextmanager
def worker(port: int):
    """`celery -A repojournal worker` with one pool process, sending to the sink; its pid while the block runs."""
    from repojournal.celery import app

    app.control.purge()  # tasks earlier phases left in the bench's queue are not this phase's work
    log = tempfile.NamedTemporaryFile(prefix="repojournal-bench-worker-", suffix=".log", delete=False)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "repojournal.settings.bench", "EMAIL_HOST": "127.0.0.1",
           "EMAIL_PORT": str(port), "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"}
    command = [sys.executable, "-m", "celery", "-A", "repojournal", "worker", "--concurrency", "1", "--loglevel",
               "info", "-n", f"bench-newsletters-{uuid.uuid4().hex[:8]}@%h", "--without-gossip", "--without-mingle"]
    process = subprocess.Popen(command, cwd=load.PROJECT_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b" ready." in Path(log.name).read_bytes() or process.poll() is not None, 120,
                 "the Celery worker did not start")
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited: {Path(log.name).read_text()[-2000:]}")
        yield process.pid, Path(log.name)
    finally:
        stop(process)
        Path(log.name).unlink(missing_ok=True)


def stop(process: subprocess.Popen) -> None:
    """A warm shutdown (the task finished: at once); a cold one if the phase was interrupted mid-send, when the
    warm one would wait for the task to send everything left."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGQUIT)
        process.wait(timeout=30)


def wait_for_send(status, expected: int, pid: int) -> None:
    """Until the server has every subscriber's message, or nothing arrived for STALL_SECONDS."""
    last_count, last_change = -1, time.monotonic()
    while (count := status()["subscribers"]["messages"]) < expected:
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        if time.monotonic() - last_change > STALL_SECONDS or rss_kib(pid) is None:
            return
        time.sleep(0.2)


def measure(subscribers: int = SUBSCRIBERS) -> dict:
    """The phase (see the module's docstring): its figures, or why it was skipped."""
    reason = missing()
    if reason:
        return {"skipped": reason}
    from newsletters import fanout, tasks

    wipe()
    digest = the_digest()
    already_mailed(digest)
    subscribing_seconds = subscribe(digest.topic, subscribers)
    email = prebuilt_email(digest)
    limit = min(subscribers, CEILING_MESSAGES)
    with Sink() as server, worker(server.port) as (pid, log):
        before = ceiling(server.port, email, server.status, limit)
        sampler = Sampler(pid)
        sampler.start()
        started, clock = time.perf_counter(), time.time()
        fanned_out = fanout.mail_published()
        fanout_seconds = time.perf_counter() - started
        tasks.queue_owed()  # as the mail_published task does after its fan-out: the worker sends
        wait_for_send(server.status, subscribers, pid)
        samples = sampler.stop()
        incomplete = server.status()["subscribers"]["messages"] < subscribers
        worker_log = log.read_text(errors="replace")[-3000:] if incomplete else None  # why, when it stalled
        after = ceiling(server.port, email, server.status, limit)
    received = server.final["subscribers"]
    span = (received["last"] - received["first"]) if received["messages"] > 1 else None
    rate = received["messages"] / span if span else 0.0
    best = max(before["messages_per_second"], after["messages_per_second"])
    return {
        "subscribers": subscribers, "email_bytes": len(email), "subscribing_seconds": subscribing_seconds,
        "fanout_seconds": round(fanout_seconds, 2), "messages_fanned_out": fanned_out,
        "deliveries": deliveries(digest),
        "ceiling": {"before": before, "after": after, "messages_per_second": best},
        "sending": {"messages": received["messages"], "seconds": round(span or 0, 2),
                    "messages_per_second": round(rate, 1), "worker_processes": 1,
                    "batch_size": settings.NEWSLETTERS_BATCH_SIZE,
                    "first_message_after_fanout_began_s": round(received["first"] - clock, 2)
                    if received["first"] else None},
        "ratio": round(rate / best, 3) if best else None,
        "received": {key: received[key] for key in ("messages", "recipients", "recipients_with_more_than_one",
                                                    "distinct_unsubscribe_links")},
        "memory": memory(samples, received["first"], received["last"]),
        **({"worker_log_tail": worker_log} if worker_log else {}),
    }


def deliveries(digest: Digest) -> dict[str, int]:
    """The digest's deliveries by state: every one must be "sent"."""
    from django.db.models import Count

    from newsletters.models import Delivery

    rows = Delivery.objects.filter(message__digest=digest, message__is_test=False).values("state")
    return {row["state"]: row["n"] for row in rows.annotate(n=Count("pk")).order_by("state")}


def memory(samples: list[tuple[float, int, int]], first: float | None, last: float | None) -> dict:
    """The worker's RSS in the first and the last tenth of the send (the nearest sample when a tenth holds
    none): the pool process that sends is what must stay flat; the main process only consumes the queue."""
    if not samples or not first or not last:
        return {"samples": len(samples), "change": None}
    tenth = (last - first) / 10

    def mean(start: float, end: float, column: int) -> int:
        inside = [sample[column] for sample in samples if start <= sample[0] <= end]
        if not inside:
            inside = [min(samples, key=lambda sample: abs(sample[0] - (start + end) / 2))[column]]
        return round(sum(inside) / len(inside))

    during = [sample for sample in samples if first <= sample[0] <= last] or samples
    pool_first, pool_last = mean(first, first + tenth, 2), mean(last - tenth, last, 2)
    return {
        "samples": len(during), "every_s": SAMPLE_EVERY,
        "pool_first_tenth_kib": pool_first, "pool_last_tenth_kib": pool_last,
        "pool_peak_kib": max(sample[2] for sample in during),
        "main_first_tenth_kib": mean(first, first + tenth, 1), "main_last_tenth_kib": mean(last - tenth, last, 1),
        "change": round(pool_last / pool_first - 1, 3) if pool_first else None,
    }


def checks(phase: dict | None) -> list[tuple[str, object, str, bool]]:
    """The issue's targets for the phase as (check, measured, bar, met); nothing when it was skipped."""
    if not phase or "skipped" in phase:
        return []
    n, received, change = phase["subscribers"], phase["received"], phase["memory"]["change"]
    unsent = sum(count for state, count in phase["deliveries"].items() if state != "sent")
    return [
        ("newsletters: sending / smtplib ceiling", phase["ratio"], f">= {RATIO_BAR}",
         phase["ratio"] is not None and phase["ratio"] >= RATIO_BAR),
        ("newsletters: worker memory, last tenth vs first", change, f"within ±{MEMORY_TOLERANCE:.0%}",
         change is not None and abs(change) <= MEMORY_TOLERANCE),
        ("newsletters: messages received / subscribers", f"{received['messages']}/{n}", "all, once each",
         received["messages"] == received["recipients"] == n and received["recipients_with_more_than_one"] == 0),
        ("newsletters: distinct unsubscribe links", received["distinct_unsubscribe_links"], f"{n}",
         received["distinct_unsubscribe_links"] == n),
        ("newsletters: deliveries not sent", unsent, "0", unsent == 0 and phase["deliveries"].get("sent") == n),
    ]
