"""The newsroom's share of the archive, and the Publisher the benchmark signs in as (issue 26).

A newsroom's queue does not grow with its archive: the same items wait for review, go out
this week, sit in the Publisher's drafts and arrive as unopened drafted digests at every
scale (``fill``), so every section the Publisher sees is full (more than ``ROWS`` rows) at
the full archive and at a tenth alike. What grows with the archive is what each section's
statement must not read: the archive's drafts (4% of posts, 3% of digests) are owned by
``EDITORS`` other editors, its scheduled posts spread over thirty days, its draft digests'
drafts already opened, and references keep arriving (each unopened draft has ``ARRIVED``
after it, counted per row).
"""
import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from blog.cards import refresh_cards
from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from digests.models import Digest, Reference, Topic
from ingestion.models import DigestDraft
from publishing.workflow import Status

from .text import title

USERNAME = "bench-publisher"
#: The superuser the admin's lists are timed as (every model, every filter, no group permissions to read).
SUPERUSER = "bench-admin"
EDITORS = 8
IN_REVIEW_POSTS, IN_REVIEW_DIGESTS, SCHEDULED, OWN_DRAFTS, RETURNED = 15, 5, 12, 12, 3
#: References created after each unopened draft (the newsroom counts them per row).
ARRIVED = 25


def users() -> tuple:
    """The Publisher (staff, in the Publishers group) and EDITORS editors, made afresh."""
    model = get_user_model()
    model.objects.filter(username__startswith="bench-").delete()
    publisher = model.objects.create_user(USERNAME, is_staff=True, first_name="Bench", last_name="Publisher")
    publisher.groups.add(Group.objects.get(name="Publishers"))
    editors = [model.objects.create_user(f"bench-editor-{n}", is_staff=True, first_name="Editor", last_name=str(n))
               for n in range(EDITORS)]
    Group.objects.get(name="Editors").user_set.add(*editors)
    model.objects.create_superuser(SUPERUSER, "bench-admin@example.com", None)
    return publisher, editors


def session_cookie(username: str = USERNAME) -> str:
    """A ``Cookie`` header value signing in as `username`, the Publisher by default (a session stored where the
    servers read it)."""
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _own_archive_drafts(editors) -> None:
    for model in (Post, Digest):
        pks = list(model.objects.filter(status=Status.DRAFT).order_by("pk").values_list("pk", flat=True))
        for n, editor in enumerate(editors):
            model.objects.filter(pk__in=pks[n::len(editors)]).update(created_by=editor, edited_by=editor)


def _posts(generator, now, publisher, editors) -> None:
    """Posts in review (some for more than 48 h), scheduled this week, and the Publisher's own drafts."""
    hour = datetime.timedelta(hours=1)
    made = []
    for n in range(IN_REVIEW_POSTS + SCHEDULED + OWN_DRAFTS):
        body, body_html, _ = generator._post_body(2)
        post = PostFactory.build(title=title(generator.random), slug=f"newsroom-{n}", body=body, status=Status.DRAFT,
                                 published_at=None, created_by=editors[n % len(editors)])
        post.body_html = body_html
        if n < IN_REVIEW_POSTS:
            post.status, post.status_changed_at = Status.IN_REVIEW, now - hour * (7 * n + 1)
            post.status_changed_by = post.created_by
        elif n < IN_REVIEW_POSTS + SCHEDULED:
            post.status, post.published_at = Status.PUBLISHED, now + hour * (12 * (n - IN_REVIEW_POSTS) + 1)
        else:
            post.created_by = post.edited_by = publisher
            if n >= IN_REVIEW_POSTS + SCHEDULED + OWN_DRAFTS - RETURNED:
                post.status_changed_at, post.status_changed_by = now - hour, publisher
        made.append(post)
    Post.objects.bulk_create(made)
    refresh_cards(Post.objects.filter(slug__startswith="newsroom-"))


def _digests(now, editors) -> None:
    """Digests in review and one unopened drafted digest per topic, on days after the archive's last."""
    last = Digest.objects.order_by("-date").values_list("date", flat=True).first() or now.date()
    topics = list(Topic.objects.order_by("pk"))
    for n in range(IN_REVIEW_DIGESTS):
        DigestFactory(topic=topics[n % len(topics)], date=last + datetime.timedelta(days=1 + n // len(topics)),
                      slug=f"newsroom-review-{n}", status=Status.IN_REVIEW, published_at=None,
                      status_changed_at=now - datetime.timedelta(hours=20 * n + 5),
                      status_changed_by=editors[n % len(editors)])
    for topic in topics:
        digest = DigestFactory(topic=topic, date=last + datetime.timedelta(days=30), slug=f"newsroom-draft-{topic.pk}",
                               status=Status.DRAFT, published_at=None)
        arrived = Reference.objects.filter(repository__topic=topic).order_by("-created_at").values_list(
            "created_at", flat=True)[ARRIVED - 1:ARRIVED]
        DigestDraft.objects.create(digest=digest, generated_at=arrived[0] if arrived else now)


def fill(generator) -> None:
    """Everything above, after the archive is generated (``Generator.run``)."""
    now = generator.now
    publisher, editors = users()
    _own_archive_drafts(editors)
    DigestDraft.objects.bulk_create(  # the archive's draft digests: drafted, and opened long ago
        DigestDraft(digest_id=pk, generated_at=now - datetime.timedelta(days=2), opened_at=now, opened_by=editors[0])
        for pk in Digest.objects.filter(status=Status.DRAFT).values_list("pk", flat=True))
    _posts(generator, now, publisher, editors)
    _digests(now, editors)
