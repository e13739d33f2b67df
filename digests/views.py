"""Reader pages of The Wire. Public views reach content only through published()."""
import datetime
from urllib.parse import urlencode

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection, models
from django.db.models import OuterRef
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from publishing import social_cards
from publishing.compiled import Statement
from publishing.context_processors import navigation
from publishing.pagination import Listing, paginate
from publishing.shown import printed, shows
from publishing.syndication import feed_links

from .charts import weekly_bars
from .models import Digest, DigestCard, DigestRepository, MergeTally, Reference, Repository, Topic
from .models.references import bucket_weeks, chart_start, every_week, timestamp_array, week_bounds, week_start
from .models.tallies import tallied_here

CHART_WEEKS = 26
REPOSITORY_DIGESTS = 20
#: What a repository page lists of each reference and its sort key (not the bodies written by strangers),
#: read as named tuples: a page of model instances cost more than its query.
LISTED_REFERENCE_FIELDS = ["kind", "title", "number", "url", "merged_at", "opened_at", "id"]
#: A reference's sort keys that may be empty: an issue is never merged, a seed's commit has no opening date.
REFERENCE_NULLABLE_KEYS = ("merged_at", "opened_at")
#: The unfiltered Wire, compiled once per process (publishing.compiled): building its query through
#: the ORM cost more CPU than the database spent answering it.
WIRE = Listing(lambda now: Digest.objects.published(now).for_cards(), now=Digest._meta.get_field("published_at"))
#: A repository's page: its published references (one partial index, see Reference.first_published_at)
#: and the digests citing it, compiled once per process like the Wire.
REPOSITORY_REFERENCES = Listing(
    lambda now, repository: Reference.objects.published(now).filter(repository=repository)
    .values_list(*LISTED_REFERENCE_FIELDS, named=True),
    nullable=REFERENCE_NULLABLE_KEYS, now=Reference._meta.get_field("first_published_at"),
    repository=Reference._meta.get_field("repository"),
)


def _published_repository(now, full_name):
    """The published repository named `full_name`, any case, with its topic; sliced as ``get()`` slices."""
    return Repository.objects.published(now).filter(full_name__iexact=full_name).select_related("topic").order_by()


def _repository_with_chart(now, full_name, since):
    """``_published_repository`` with, as two arrays, its chart's tally since `since` (``chart_weeks``,
    ``chart_totals``)."""
    tally = MergeTally.objects.counted(now).filter(repository=OuterRef("pk"), week__gte=since).weekly_totals()
    return _published_repository(now, full_name).annotate(
        chart_weeks=ArraySubquery(tally.values("week")), chart_totals=ArraySubquery(tally.values("total")),
    )


#: ``get_object_or_404`` of a published repository by its name, with its topic (one statement).
REPOSITORY = Statement(
    lambda now, full_name: _published_repository(now, full_name)[:21],
    now=Digest._meta.get_field("published_at"), full_name=Repository._meta.get_field("full_name"),
)
#: The same and the repository's chart, in one statement: PostgreSQL in the tally's zone
#: (``tallied_here``). The chart's own statement was a few hundredths of a millisecond in the
#: database and four times that around it (Django, psycopg, the round trip).
REPOSITORY_WITH_CHART = Statement(
    lambda now, full_name, since: _repository_with_chart(now, full_name, since)[:21],
    now=Digest._meta.get_field("published_at"), full_name=Repository._meta.get_field("full_name"),
    since=MergeTally._meta.get_field("week"),
)
#: A repository's published merges per week (``TruncWeek`` in the current zone), counted live: the chart
#: on SQLite, which keeps no tally.
WEEKLY_MERGES = Statement(
    lambda now, repository, since: Reference.objects.published(now).filter(repository=repository).merged_weeks(since),
    now=Reference._meta.get_field("first_published_at"), repository=Reference._meta.get_field("repository"),
    since=Reference._meta.get_field("merged_at"),
)
#: The same counts on PostgreSQL in a zone other than the tally's, by ``width_bucket`` over the weeks'
#: edges (``merged_in_weeks``).
WEEKLY_BUCKETS = Statement(
    lambda now, repository, since, bounds: Reference.objects.published(now).filter(repository=repository)
    .merged_in_weeks(since, bounds),
    now=Reference._meta.get_field("first_published_at"), repository=Reference._meta.get_field("repository"),
    since=Reference._meta.get_field("merged_at"), bounds=models.CharField(),
)
#: The newest digests citing a repository, as (pk, stored card) rows: the page prints nothing else of them.
CITING_DIGESTS = Statement(
    lambda now, repository: Digest.objects.newest_citing(repository, now).values_list("pk", "card_html")
    [:REPOSITORY_DIGESTS],
    now=Digest._meta.get_field("published_at"), repository=DigestRepository._meta.get_field("repository"),
)


def render_digest(request, digest: Digest, *, preview: bool = False):
    """The stored parts of the digest (``digests.cards``) plus what depends on other digests: previous/next."""
    previous, following = digest.neighbours()
    shows(request, digest, digest.topic, previous, following)
    links = navigation(request)["links"]  # reversed once per process
    return render(
        request,
        "digests/digest_detail.html",
        {
            "digest": digest,
            "previous": previous,
            "next": following,
            "preview": preview,
            "preview_status": digest.display_status,
            "topic_name": digest.topic.name,
            "breadcrumbs": [
                ("Home", links["home"]),
                ("The Wire", links["wire"]),
                (digest.topic.name, digest.topic.get_absolute_url()),
                (digest.headline, digest.get_absolute_url()),
            ],
        },
    )


def digest_card(request, slug: str, key: str):
    """A published digest's og:image at its fingerprinted URL (``publishing.social_cards``)."""
    digest = get_object_or_404(Digest.objects.published().only("slug", "social_card"), slug=slug)
    shows(request, digest)
    return social_cards.serve(DigestCard, digest, key, digest.social_card_url)


def digest_detail(request, slug: str):
    digest = get_object_or_404(Digest.objects.published().for_page(), slug=slug)
    return render_digest(request, digest)


@staff_member_required
def digest_preview(request, pk: int):
    """Staff see any digest, whatever its status, exactly as readers will."""
    return render_digest(request, get_object_or_404(Digest.objects.for_page(), pk=pk), preview=True)


def _wire_filters(request) -> tuple[Topic | None, Repository | None]:
    """The topic and repository named by ``?topic=`` and ``?repository=``; unknown names are a 404."""
    topic = repository = None
    if slug := request.GET.get("topic"):
        topic = Topic.objects.published().filter(slug=slug).first()
        if topic is None:
            raise Http404("No such topic.")
    if full_name := request.GET.get("repository"):
        repository = Repository.objects.published().filter(full_name__iexact=full_name).first()
        if repository is None:
            raise Http404("No such repository.")
    return topic, repository


def wire_heading(topic: Topic | None, repository: Repository | None) -> str:
    """"The Wire", then what the listing is filtered by: its ``<h1>`` and, with the site's name, its
    ``<title>``, so that each filtered listing is told apart in tabs, history and search results."""
    names = [name for name in (topic.name if topic else "", repository.full_name if repository else "") if name]
    return f"The Wire: {' · '.join(names)}" if names else "The Wire"


def wire_filter_query(topic: Topic | None, repository: Repository | None) -> str:
    """The filters as the canonical link's query string: the names as stored (whatever case the reader
    typed) and nothing else of the request's (empty fields, tracking parameters)."""
    pairs = [("topic", topic.slug if topic else ""), ("repository", repository.full_name if repository else "")]
    return urlencode([(key, value) for key, value in pairs if value])


def wire_index(request):
    """The Wire: every published digest, newest first, optionally for one topic or repository."""
    topic, repository = _wire_filters(request)
    if topic or repository:
        digests = Digest.objects.published().for_cards()
        if topic:
            digests = digests.filter(topic=topic)
        if repository:
            digests = digests.citing(repository)
        page = paginate(request, digests)
    else:
        page = WIRE.page(request, now=timezone.now())
    shows(request, page, topic, repository)
    return render(
        request,
        "digests/wire_index.html",
        {
            "page": page,
            "topic": topic,
            "repository": repository,
            "heading": wire_heading(topic, repository),
            "filters": wire_filter_query(topic, repository),
            "topics": Topic.objects.published_choices(),
            "feeds": feed_links("The Wire", "digests:feed"),
        },
    )


def topic_detail(request, slug: str):
    topic = get_object_or_404(Topic.objects.published(), slug=slug)
    links = navigation(request)["links"]  # reversed once per process
    page = paginate(request, Digest.objects.published().filter(topic=topic).for_cards())
    shows(request, topic, page)  # its repositories: a repository's change purges its topic's key
    return render(
        request,
        "digests/topic_detail.html",
        {
            "topic": topic,
            "page": page,
            "repositories": Repository.objects.filter(topic=topic).published().only("full_name"),
            "feeds": feed_links(f"The Wire: {topic.name}", "digests:topic_feed", topic.slug),
            "breadcrumbs": [
                ("Home", links["home"]),
                ("The Wire", links["wire"]),
                (topic.name, topic.get_absolute_url()),
            ],
        },
    )


def topic_index(request):
    topics = Topic.objects.published().only("name", "slug", "description")
    return render(request, "digests/topic_index.html", {"topics": topics})


def weekly_merges(repository_id: int, now) -> list[tuple[datetime.date, int]]:
    """The repository's published merges per week, ``CHART_WEEKS`` weeks to this one, zeros included,
    counted live: where the database keeps no tally in the current zone's weeks (``tallied_here``)."""
    first_monday = chart_start(CHART_WEEKS)
    if connection.vendor != "postgresql":  # SQLite has no width_bucket
        weeks = WEEKLY_MERGES.fetch(now=now, repository=repository_id, since=week_start(first_monday))
        return every_week(weeks, first_monday, CHART_WEEKS)
    bounds = week_bounds(first_monday, CHART_WEEKS)
    rows = WEEKLY_BUCKETS.fetch(now=now, repository=repository_id, since=bounds[0], bounds=timestamp_array(bounds))
    return every_week(bucket_weeks(rows, first_monday, CHART_WEEKS), first_monday, CHART_WEEKS)


def _repository_and_weeks(now, full_name: str):
    """The published repository (or 404) and its chart's weeks: one statement where the database
    keeps the tally in the current zone's weeks (``REPOSITORY_WITH_CHART``), two elsewhere."""
    if not tallied_here():
        repository = REPOSITORY.get_or_404(now=now, full_name=full_name)
        return repository, weekly_merges(repository.pk, now)
    first_monday = chart_start(CHART_WEEKS)
    repository = REPOSITORY_WITH_CHART.get_or_404(now=now, full_name=full_name, since=first_monday)
    return repository, every_week(zip(repository.chart_weeks, repository.chart_totals), first_monday, CHART_WEEKS)


def repository_detail(request, owner: str, name: str):
    """A repository's cited references, the digests citing it and its weekly merged activity.

    Every query is an index walk of this repository's rows alone: the references
    through ``Reference.first_published_at``'s partial index (a busy repository
    has thousands of references, a few percent of them cited), the digests
    through ``DigestRepository``, the chart through ``MergeTally`` (about a row
    a week, read with the repository; counted live where there is no tally). Before that column the queries were planned
    per run, as one generic plan made the busiest repository's page twice as
    slow; now one plan suits every repository, and the statements are compiled
    once per process (``publishing.compiled``) like the Wire's.
    """
    now = timezone.now()
    repository, weeks = _repository_and_weeks(now, f"{owner}/{name}")
    links = navigation(request)["links"]  # reversed once per process
    page = REPOSITORY_REFERENCES.page(request, now=now, repository=repository.pk)
    digests = CITING_DIGESTS.fetch(now=now, repository=repository.pk)  # (pk, card_html) rows
    chart = weekly_bars(weeks)
    # The repository's key covers its references: a change to one purges repo-<pk>.
    shows(request, repository, repository.topic, printed(Digest, [pk for pk, _ in digests]))
    return render(
        request,
        "digests/repository_detail.html",
        {
            "repository": repository,
            "page": page,
            "digest_cards": [card for _, card in digests],
            "chart": chart,
            "feeds": feed_links(
                f"The Wire: {repository.full_name}", "digests:repository_feed", repository.owner, repository.name
            ),
            "breadcrumbs": [
                ("Home", links["home"]),
                ("The Wire", links["wire"]),
                (repository.full_name, repository.get_absolute_url()),
            ],
        },
    )
