"""Reader pages of The Wire. Public views reach content only through published()."""
from django.contrib.admin.views.decorators import staff_member_required
from django.db import connections
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from publishing.compiled import planned_per_run
from publishing.context_processors import navigation
from publishing.pagination import Listing, paginate
from publishing.shown import shows
from publishing.syndication import feed_links

from .charts import weekly_bars
from .models import Digest, Reference, Repository, Topic

CHART_WEEKS = 26
REPOSITORY_DIGESTS = 20
#: What a repository page lists of each reference (and its sort key): not the bodies written by strangers.
LISTED_REFERENCE_FIELDS = ["kind", "title", "number", "url", "merged_at", "opened_at"]
#: The unfiltered Wire, compiled once per process (publishing.compiled): building its query through
#: the ORM cost more CPU than the database spent answering it.
WIRE = Listing(lambda now: Digest.objects.published(now).for_cards(), now=Digest._meta.get_field("published_at"))


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


def repository_detail(request, owner: str, name: str):
    """A repository's cited references, the digests citing it and its weekly merged activity.

    Its queries are planned for this repository (``planned_per_run``): repositories range
    from a few references to tens of thousands, and one generic plan for all of them made
    the busiest repository's page twice as slow (~120 ms against ~55 ms on the benchmark's).
    """
    repository = get_object_or_404(
        Repository.objects.published().select_related("topic"), full_name__iexact=f"{owner}/{name}"
    )
    references = Reference.objects.published().filter(repository=repository)
    links = navigation(request)["links"]  # reversed once per process
    with planned_per_run(connections[references.db]):
        page = paginate(request, references.only(*LISTED_REFERENCE_FIELDS))
        digests = list(Digest.objects.published().for_cards().citing(repository)[:REPOSITORY_DIGESTS])
        chart = weekly_bars(references.merged_per_week(CHART_WEEKS))
    shows(request, repository, repository.topic, digests)  # its references: a reference purges repo-<pk>
    return render(
        request,
        "digests/repository_detail.html",
        {
            "repository": repository,
            "page": page,
            "digests": digests,
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
