"""The admin's preview of a 20,000-character digest body (issue 37): what an editor waits for after typing.

Why: the preview beside a Markdown field is asked for again a moment after every pause in typing
(``static/images/writing.js``), rendered by the page's own renderer and sanitiser with what the text
cites looked up as the form stands (``publishing.previews``). A long body must still come back well
inside that pause, or the preview lags behind the text it shows.

How: an Editor (the role with the fewest rights that writes), a draft digest citing ``REFERENCES``
references, and a 20,000-character body that cites each of them, with links, code, a list, a table
and an image reference -- posted as writing.js sends it (the field and the form's citation rows) to
``admin:digests_digest_preview`` ``rounds`` times after one unrecorded request, each POST timed whole
in-process (Django's test client: the admin's middleware and session included, no network). The
renderer's own share is timed apart (``render_p50_ms``). Everything made here is deleted afterwards.
"""
import datetime
import math
import statistics
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from digests.models import Digest, DigestReference, Reference, Repository, Topic
from digests.previews import BODY, cited_as_typed
from publishing import previews
from publishing.workflow import Status

CHARS = 20_000
REFERENCES = 20
ROUNDS = 20
USERNAME = "bench-preview-editor"
SLUG = "bench-preview"


def body(chars: int = CHARS, references: int = REFERENCES) -> str:
    """``chars`` characters of a long digest body as editors write them, citing every reference."""
    blocks, number = [], 0
    while sum(len(block) + 2 for block in blocks) < chars:
        number = number % references + 1
        blocks.append(f"The allocator now keeps one free list per size class [{number}], so `malloc` under "
                      f"contention no longer takes the global lock; see [the design note]"
                      f"(https://example.org/notes/{number}) and the benchmark in [ref:{number}].")
        if len(blocks) % 8 == 0:
            blocks += ["- fewer locks\n- smaller arenas\n- **faster** frees",
                       "```python\nfree_lists[size_class].append(block)\n```",
                       "| size | before | after |\n|---:|---:|---:|\n| 64 | 91 ns | 40 ns |",
                       "![The allocator's throughput before and after](image:999999999)"]
    return "\n\n".join(blocks)[:chars]


def make_digest(references: int) -> Digest:
    topic = Topic.objects.create(name="Bench preview", slug=SLUG)
    repository = Repository.objects.create(full_name="bench-preview/allocator", topic=topic)
    digest = Digest.objects.create(topic=topic, date=datetime.date(2031, 6, 1), headline="A long body",
                                   summary="Cites [1].", slug=SLUG, status=Status.DRAFT)
    for number in range(1, references + 1):
        reference = Reference.objects.create(
            repository=repository, kind=Reference.Kind.PULL_REQUEST, key=str(number), number=number,
            title=f"Keep one free list per size class, part {number}", state="merged",
            url=f"https://github.com/bench-preview/allocator/pull/{number}")
        DigestReference.objects.create(digest=digest, reference=reference, number=number)
    return digest


def form_data(digest: Digest, text: str) -> dict:
    """What writing.js posts: the field, its text, and the citation rows as the form holds them."""
    rows = list(digest.digest_references.order_by("number"))
    data = {"field": "body", "body": text, "digest_references-TOTAL_FORMS": str(len(rows))}
    for index, row in enumerate(rows):
        data.update({f"digest_references-{index}-id": str(row.pk), f"digest_references-{index}-number": str(row.number),
                     f"digest_references-{index}-reference": str(row.reference_id)})
    return data


def cleanup() -> None:
    with transaction.atomic():
        Digest.objects.filter(slug=SLUG).delete()
        Reference.objects.filter(repository__topic__slug=SLUG).delete()
        Repository.objects.filter(topic__slug=SLUG).delete()
        Topic.objects.filter(slug=SLUG).delete()
        get_user_model().objects.filter(username=USERNAME).delete()


def measure(rounds: int = ROUNDS, chars: int = CHARS, references: int = REFERENCES) -> dict:
    """The preview endpoint's time for a ``chars``-character body: median, p90 and max of ``rounds`` POSTs."""
    cleanup()
    editor = get_user_model().objects.create_user(USERNAME, is_staff=True)
    editor.groups.add(Group.objects.get(name="Editors"))
    try:
        digest = make_digest(references)
        text = body(chars, references)
        client = Client()
        client.force_login(editor)
        url, data = reverse("admin:digests_digest_preview", args=[digest.pk]), form_data(digest, text)
        client.post(url, data)  # unrecorded: the first request of a process imports and compiles what others reuse
        timings, queries = [], 0
        for _ in range(max(2, rounds)):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.post(url, data)
                timings.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200 or "preview-references" not in response.json()["html"]:
                raise RuntimeError(f"the preview answered {response.status_code}: {response.content[:200]!r}")
            queries = max(queries, len(captured))
        rendering = []
        for _ in range(max(2, rounds)):
            started = time.perf_counter()
            previews.preview(BODY, text, lambda: cited_as_typed(_Posted(data), digest))
            rendering.append((time.perf_counter() - started) * 1000)
    finally:
        cleanup()
    ordered = sorted(timings)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]  # nearest rank
    return {"chars": len(text), "citations": references, "rounds": len(timings),
            "p50_ms": round(statistics.median(timings), 1), "p90_ms": round(p90, 1),
            "max_ms": round(ordered[-1], 1), "render_p50_ms": round(statistics.median(rendering), 1),
            "queries": queries}


class _Posted:
    """A request's ``POST`` and nothing else: what ``cited_as_typed`` reads."""

    def __init__(self, data: dict):
        self.POST = data


def text(measured: dict | None) -> str:
    """One line for docs/benchmarks.md."""
    if not measured:
        return "not run."
    return (f"{measured['chars']:,} characters citing {measured['citations']} references: p50 {measured['p50_ms']} ms, "
            f"p90 {measured['p90_ms']} ms, max {measured['max_ms']} ms of {measured['rounds']} "
            f"(rendering and sanitising {measured['render_p50_ms']} ms of it; {measured['queries']} queries).")
