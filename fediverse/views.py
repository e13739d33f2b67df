"""Discovery and documents: WebFinger, host-meta, NodeInfo, actors, outboxes and followers collections."""
from urllib.parse import urlsplit

from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_safe

from blog.models import Post
from digests.models import Digest
from publishing.pagination import paginate

from . import actors, objects

ACTIVITY_JSON = "application/activity+json"
JRD = "application/jrd+json"
PROFILE_PAGE = "http://webfinger.net/rel/profile-page"
NODEINFO_SCHEMA = "http://nodeinfo.diaspora.software/ns/schema/2.1"
OUTBOX_PAGE = 20


def activity_response(document: dict, status: int = 200) -> JsonResponse:
    return JsonResponse(document, status=status, content_type=ACTIVITY_JSON, json_dumps_params={"ensure_ascii": False})


def open_to_all(response: HttpResponse) -> HttpResponse:
    """WebFinger and NodeInfo are read by web clients on other origins (RFC 7033 §5)."""
    response["Access-Control-Allow-Origin"] = "*"
    return response


def requested_actor(request) -> actors.Actor:
    """The actor WebFinger's ``resource`` names: ``acct:handle@host`` or the actor's page or id URL.

    400 when the resource is missing, malformed or names another host; 404 when no actor has it.
    """
    resource = request.GET.get("resource", "").strip()
    host = request.get_host().lower()
    if resource.startswith("acct:"):
        handle, at, domain = resource[len("acct:"):].lstrip("@").rpartition("@")
        if not at or not handle or domain.lower() != host:
            raise BadResource("The resource must be acct:<handle>@" + host + ".")
        actor = actors.find(handle)
    elif resource.startswith(("https://", "http://")):
        parts = urlsplit(resource)
        if parts.netloc.lower() != host:
            raise BadResource("That URL is not on " + host + ".")
        actor = actors.at_page(parts.path)
    else:
        raise BadResource("Give resource=acct:<handle>@" + host + " or the URL of an actor's page.")
    if actor is None:
        raise Http404("No fediverse account has that name here.")
    return actor


class BadResource(ValueError):
    pass


@require_safe
def webfinger(request):
    try:
        actor = requested_actor(request)
    except BadResource as error:
        return open_to_all(HttpResponseBadRequest(str(error), content_type="text/plain"))
    except Http404 as error:
        return open_to_all(HttpResponse(str(error), status=404, content_type="text/plain"))
    page = request.build_absolute_uri(actor.page)
    return open_to_all(JsonResponse({
        "subject": f"acct:{actor.handle}@{request.get_host()}",
        "aliases": [actor.id(request), page],
        "links": [
            {"rel": "self", "type": ACTIVITY_JSON, "href": actor.id(request)},
            {"rel": PROFILE_PAGE, "type": "text/html", "href": page},
        ],
    }, content_type=JRD))


@require_safe
def host_meta(request):
    template = request.build_absolute_uri(reverse("fediverse:webfinger")) + "?resource={uri}"
    body = render_to_string("fediverse/host-meta.xml", {"template": template})
    return open_to_all(HttpResponse(body, content_type="application/xrd+xml; charset=utf-8"))


@require_safe
def nodeinfo_links(request):
    href = request.build_absolute_uri(reverse("fediverse:nodeinfo"))
    return open_to_all(JsonResponse({"links": [{"rel": NODEINFO_SCHEMA, "href": href}]}))


@require_safe
def nodeinfo(request):
    """NodeInfo 2.1: what software this is and how much it has published (two counts)."""
    local_posts = Post.objects.published().count() + Digest.objects.published().count()
    return open_to_all(JsonResponse({
        "version": "2.1",
        "software": {"name": "repojournal", "version": "1.0", "homepage": request.build_absolute_uri("/")},
        "protocols": ["activitypub"],
        "services": {"inbound": [], "outbound": ["atom1.0", "rss2.0"]},
        "openRegistrations": False,
        "usage": {"users": {}, "localPosts": local_posts},
        "metadata": {"nodeName": "RepoJournal"},
    }, content_type=f'application/json; profile="{NODEINFO_SCHEMA}#"'))


def actor_or_404(handle: str) -> actors.Actor:
    actor = actors.find(handle)
    if actor is None:
        raise Http404("No fediverse account has that name here.")
    return actor


@require_safe
def actor(request, handle: str):
    return activity_response(actor_or_404(handle).document(request))


@require_safe
def outbox(request, handle: str):
    """A paged OrderedCollection of ``Create`` activities, newest first (keyset pages: ``?cursor=``)."""
    found = actor_or_404(handle)
    own = found.id(request) + "/outbox"
    items = found.items()
    if "page" not in request.GET and "cursor" not in request.GET:
        return activity_response(objects.with_context({
            "id": own, "type": "OrderedCollection", "totalItems": items.count(), "first": own + "?page=1",
        }))
    listed = items.order_by("-published_at", "-id")
    listed = (listed.select_related("lead_image").with_reader_data() if listed.model is Post
              else listed.select_related("topic"))
    page = paginate(request, listed, OUTBOX_PAGE)
    document = {"id": request.build_absolute_uri(), "type": "OrderedCollectionPage", "partOf": own,
                "orderedItems": [objects.create(request, item, found) for item in page]}
    if page.next_cursor:
        document["next"] = f"{own}?cursor={page.next_cursor}"
    if page.previous_cursor:
        document["prev"] = f"{own}?cursor={page.previous_cursor}"
    return activity_response(objects.with_context(document))


@require_safe
def followers(request, handle: str):
    """How many follow the actor; never who (following itself comes in a later part of issue 38)."""
    own = actor_or_404(handle).id(request) + "/followers"
    return activity_response(objects.with_context({"id": own, "type": "OrderedCollection", "totalItems": 0}))


def post_document(request, slug: str):
    post = get_object_or_404(Post.objects.published().select_related("lead_image").with_reader_data(), slug=slug)
    return post, objects.with_context(objects.post_article(request, post))


def digest_document(request, slug: str):
    digest = get_object_or_404(Digest.objects.published().select_related("topic"), slug=slug)
    return digest, objects.with_context(objects.digest_article(request, digest))
