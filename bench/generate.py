"""A realistic archive at a chosen scale, built from the test factories with bulk inserts.

The factories decide what a valid object looks like (``.build()`` fills every
field without saving); ``bulk_create`` writes thousands per statement. Bulk
inserts skip ``save()``, so the rendered HTML is filled in here -- from a pool
of paragraphs rendered once through ``render_markdown``, since rendering
300,000 bodies one by one would take longer than the benchmark.
Distributions are long-tailed, as in a real archive: one tag is on almost half
the posts, a few authors write most of them, a few repositories get most PRs.
"""
import dataclasses
import datetime
import html
import itertools
import json
import random
import time

from django.conf import settings
from django.db import connection
from django.utils import timezone
from django.utils.html import strip_tags
from django.utils.text import Truncator
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.cards import refresh_cards
from blog.models import EXCERPT_WORDS, Author, Post, PostAuthor, TaggedPost
from digests.factories import (
    ActionItemFactory, DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory,
)
from digests.models import (
    ActionItem, Digest, DigestReference, FAQEntry, MergeTally, Reference, Repository, Topic,
)
from ingestion.models import WebhookDelivery
from publishing.rendering import cut_at_word, render_markdown
from publishing.workflow import Status

from . import newsroom
from .text import WORDS, paragraph, sentence, title

BATCH = 5_000
#: Share of posts carrying the most popular tag (so "page 100" of it exists from 5,000 posts up).
TOP_TAG_SHARE = 0.45
PARAGRAPHS = 400


@dataclasses.dataclass(frozen=True)
class Scale:
    """How many of each object; the issue's default archive is ``Scale()``."""

    posts: int = 50_000
    authors: int = 500
    tags: int = 2_000
    digests: int = 3_000
    references: int = 300_000
    action_items: int = 10_000
    topics: int = 12
    repositories: int = 400
    #: Webhook deliveries: a month of them (what retention keeps), about 1,000 a day at the full archive.
    deliveries: int = 30_000

    def times(self, factor: float) -> "Scale":
        """This scale multiplied by `factor` (every count at least 2, topics kept)."""
        counts = {f.name: max(2, round(getattr(self, f.name) * factor)) for f in dataclasses.fields(self)}
        return Scale(**{**counts, "topics": min(self.topics, counts["digests"])})


def weights(count: int, exponent: float = 1.0) -> list[float]:
    """Zipf weights: the item of rank r is drawn in proportion to 1 / r**exponent."""
    return [1 / (rank ** exponent) for rank in range(1, count + 1)]


def wipe() -> None:
    """Empty every table the generator fills (and what hangs off them)."""
    models = [FAQEntry, ActionItem, DigestReference, Digest, Reference, MergeTally, Repository, Topic,
              TaggedPost, PostAuthor, Post, Author, Tag, WebhookDelivery]
    if connection.vendor == "postgresql":
        tables = ", ".join(model._meta.db_table for model in models)
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
        return
    for model in models:
        model.objects.all().delete()


def bulk(model, objects) -> list:
    return model.objects.bulk_create(objects, batch_size=BATCH)


class Generator:
    """Fills the database with one archive; ``run()`` returns how long each part took."""

    def __init__(self, scale: Scale, seed: int = 6):
        self.scale = scale
        self.random = random.Random(seed)
        self.now = timezone.now()
        self.timings: dict[str, float] = {}
        self.pool = [self._rendered_paragraph() for _ in range(PARAGRAPHS)]

    def _rendered_paragraph(self) -> tuple[str, str, str]:
        text = paragraph(self.random)
        rendered = render_markdown(text)
        return text, rendered, " ".join(html.unescape(strip_tags(rendered)).split())

    def _body(self, paragraphs: int) -> tuple[str, str]:
        body, body_html, _ = self._post_body(paragraphs)
        return body, body_html

    def _post_body(self, paragraphs: int) -> tuple[str, str, str]:
        """Markdown, its HTML and its plain text, from the pool of rendered paragraphs."""
        chosen = self.random.sample(self.pool, paragraphs)
        return ("\n\n".join(text for text, _, _ in chosen), "\n".join(rendered for _, rendered, _ in chosen),
                " ".join(plain for _, _, plain in chosen))

    def _timed(self, name: str, function):
        started = time.perf_counter()
        result = function()
        self.timings[name] = round(time.perf_counter() - started, 2)
        return result

    def run(self) -> dict[str, float]:
        self._timed("wipe", wipe)
        authors = self._timed("authors", self.authors)
        tags = self._timed("tags", self.tags)
        posts = self._timed("posts", self.posts)
        self._timed("bylines", lambda: self.bylines(posts, authors))
        self._timed("tagging", lambda: self.tagging(posts, tags))
        self._timed("post_cards", lambda: refresh_cards(Post.objects.all()))
        repositories = self._timed("repositories", self.repositories)
        references = self._timed("references", lambda: self.references(repositories))
        digests = self._timed("digests", lambda: self.digests(repositories, references))
        self._timed("action_items", lambda: self.action_items(digests, repositories))
        self._timed("digest_parts", self.digest_parts)
        self._timed("deliveries", lambda: self.deliveries(repositories))
        # What beat's fold_merge_tallies does every five minutes in production: sum the charts' tally.
        self._timed("merge_tallies", MergeTally.objects.fold)
        self._timed("newsroom", lambda: newsroom.fill(self))  # the admin's front page: bench/newsroom.py
        if connection.vendor == "postgresql":
            self._timed("analyze", lambda: connection.cursor().execute("VACUUM ANALYZE"))
        return self.timings

    # Blog ---------------------------------------------------------------------------------

    def authors(self) -> list[Author]:
        return bulk(Author, (AuthorFactory.build(slug=f"author-{i}", name=f"Author {i}", handle=f"author{i}")
                             for i in range(self.scale.authors)))

    def tags(self) -> list[Tag]:
        names = (f"{WORDS[i % len(WORDS)]}-{i}" if i >= len(WORDS) else WORDS[i] for i in range(self.scale.tags))
        return bulk(Tag, (Tag(name=name, slug=name) for name in names))

    def _status(self, index: int, total: int) -> tuple[str, datetime.datetime | None]:
        """Mostly published, oldest first; a few drafts and a few scheduled for the coming days."""
        roll = self.random.random()
        if roll < 0.04:
            return Status.DRAFT, None
        if roll < 0.06:
            return Status.PUBLISHED, self.now + datetime.timedelta(days=self.random.randint(1, 30))
        return Status.PUBLISHED, self.now - datetime.timedelta(hours=(total - index) * 2 + 1)

    def posts(self) -> list[Post]:
        def build(i: int) -> Post:
            status, published_at = self._status(i, self.scale.posts)
            body, body_html, plain = self._post_body(self.random.randint(2, 5))
            post = PostFactory.build(title=title(self.random), slug=f"post-{i}", body=body,
                                     status=status, published_at=published_at)
            # What Post.save() would derive (bulk inserts skip it); the card comes after bylines and tags.
            post.body_html, post.word_count = body_html, len(plain.split())
            post.auto_excerpt = Truncator(plain).words(EXCERPT_WORDS, truncate=" …")
            post.meta_description = cut_at_word(" ".join(plain.split()))
            return post

        return bulk(Post, (build(i) for i in range(self.scale.posts)))

    def bylines(self, posts: list[Post], authors: list[Author]) -> None:
        author_weights = weights(len(authors))

        def links(post: Post):
            count = 1 if self.random.random() < 0.8 else 2
            chosen = {id(a): a for a in self.random.choices(authors, author_weights, k=count)}.values()
            return (PostAuthor(post=post, author=author, position=n) for n, author in enumerate(chosen))

        bulk(PostAuthor, itertools.chain.from_iterable(links(post) for post in posts))

    def tagging(self, posts: list[Post], tags: list[Tag]) -> None:
        tail, tail_weights = tags[1:], weights(len(tags) - 1)

        def items(post: Post):
            chosen = {tag.pk: tag for tag in self.random.choices(tail, tail_weights, k=self.random.randint(1, 4))}
            if self.random.random() < TOP_TAG_SHARE:
                chosen = {tags[0].pk: tags[0], **chosen}
            return (TaggedPost(content_object=post, tag=tag) for tag in chosen.values())

        bulk(TaggedPost, itertools.chain.from_iterable(items(post) for post in posts))

    # The Wire -----------------------------------------------------------------------------

    def repositories(self) -> list[Repository]:
        topics = bulk(Topic, (TopicFactory.build(name=f"Topic {t}", slug=f"topic-{t}", description=sentence(self.random))
                              for t in range(self.scale.topics)))

        def build(r: int) -> Repository:
            full_name = f"org{r % len(topics)}/repo-{r}"
            return RepositoryFactory.build(topic=topics[r % len(topics)], full_name=full_name,
                                           url=f"https://github.com/{full_name}")

        return bulk(Repository, (build(r) for r in range(self.scale.repositories)))

    def references(self, repositories: list[Repository]) -> list[Reference]:
        repository_weights = weights(len(repositories), 0.8)
        span = datetime.timedelta(days=max(30, self.scale.digests // self.scale.topics + 30))

        def build(i: int) -> Reference:
            repository = self.random.choices(repositories, repository_weights)[0]
            body, body_html = self._body(self.random.randint(1, 2))
            merged_at = self.now - span * (1 - i / self.scale.references)
            reference = ReferenceFactory.build(
                repository=repository, number=i + 1, key=str(i + 1), title=title(self.random), body=body,
                merged_at=merged_at, opened_at=merged_at - datetime.timedelta(days=2),
                labels=self.random.sample(WORDS[:40], 2),
            )
            reference.body_html = body_html
            return reference

        return bulk(Reference, (build(i) for i in range(self.scale.references)))

    def digests(self, repositories: list[Repository], references: list[Reference]) -> list[Digest]:
        """Each topic gets one digest a day, citing 8-20 of its own repositories' references."""
        by_topic: dict[Topic, list[Reference]] = {}
        topic_of = {repository.pk: repository.topic for repository in repositories}
        for reference in references:
            by_topic.setdefault(topic_of[reference.repository_id], []).append(reference)
        topics = sorted(by_topic, key=lambda topic: topic.pk)
        first_day = self.now.date() - datetime.timedelta(days=self.scale.digests // len(topics) + 1)
        digests, citations = [], []
        for i in range(self.scale.digests):
            topic = topics[i % len(topics)]
            cited = self.random.sample(by_topic[topic], min(len(by_topic[topic]), self.random.randint(8, 20)))
            digests.append(self._digest(topic, first_day + datetime.timedelta(days=i // len(topics)), len(cited)))
            citations.append(cited)
        digests = bulk(Digest, digests)
        bulk(DigestReference, (DigestReferenceFactory.build(digest=digest, reference=reference, number=n)
                               for digest, cited in zip(digests, citations)
                               for n, reference in enumerate(cited, start=1)))
        return digests

    def _digest(self, topic: Topic, day: datetime.date, cited: int) -> Digest:
        status = Status.DRAFT if self.random.random() < 0.03 else Status.PUBLISHED
        marks = " ".join(f"[{n}]" for n in range(1, cited + 1))
        summary = f"{sentence(self.random)} {marks}"
        body = "\n\n".join(f"{paragraph(self.random)} [{n}]" for n in range(1, min(cited, 4) + 1))
        digest = DigestFactory.build(
            topic=topic, date=day, headline=title(self.random), summary=summary, body=body,
            slug=f"{topic.slug}-{day}", status=status,
            published_at=(timezone.make_aware(datetime.datetime.combine(day, datetime.time(18)))
                          if status == Status.PUBLISHED else None),
        )
        digest.summary_html = render_markdown(summary, citations=True)
        digest.body_html = render_markdown(body, citations=True)
        return digest

    def digest_parts(self) -> None:
        """The cards and page parts Digest's signals would render (bulk inserts send none): digests/cards.py."""
        Digest.objects.all().refresh_rendered()

    def action_items(self, digests: list[Digest], repositories: list[Repository]) -> None:
        priorities = list(ActionItem.Priority.values)
        by_topic: dict[int, list[Repository]] = {}
        for repository in repositories:
            by_topic.setdefault(repository.topic_id, []).append(repository)

        def build(i: int) -> ActionItem:
            digest = digests[i % len(digests)]
            return ActionItemFactory.build(
                digest=digest, position=i // len(digests), text=sentence(self.random),
                repository=self.random.choice(by_topic[digest.topic_id]), priority=self.random.choice(priorities),
            )

        bulk(ActionItem, (build(i) for i in range(self.scale.action_items)))

    # Ingestion ----------------------------------------------------------------------------

    def deliveries(self, repositories: list[Repository]) -> None:
        """The last month's webhook deliveries, as retention leaves them: bodies of the last week only
        (compact ones: the admin lists never read them), one in a hundred failed for good."""
        events = [("pull_request", "closed"), ("push", ""), ("issues", "opened"), ("release", "published")]
        month = datetime.timedelta(days=settings.RETENTION_WEBHOOK_DELIVERY_DAYS)
        with_body = datetime.timedelta(days=settings.RETENTION_WEBHOOK_BODY_DAYS)

        def build(i: int) -> WebhookDelivery:
            event, action = self.random.choices(events, [50, 30, 15, 5])[0]
            repository = self.random.choice(repositories)
            received = self.now - month * (1 - i / self.scale.deliveries)
            payload = {"action": action, "repository": {"full_name": repository.full_name}}
            failed = i % 100 == 99
            return WebhookDelivery(
                guid=f"archive-{i}", event=event, action=action, repository_full_name=repository.full_name,
                headers={"X-GitHub-Event": event}, received_at=received, processed_at=received,
                body=json.dumps(payload).encode() if self.now - received <= with_body else b"",
                attempts=6 if failed else 1,
                state=WebhookDelivery.State.FAILED if failed else WebhookDelivery.State.PROCESSED,
                detail="HTTP 502 from GitHub" if failed else "")

        bulk(WebhookDelivery, (build(i) for i in range(self.scale.deliveries)))
