"""What the edit bar shows a signed-in staff user on a public page, and about which object.

The bar is printed only into answers no cache keeps. It renders only when the request carries
the session cookie: the very test by which the edge passes a request to the app
(deploy/varnish/default.vcl), the edge headers make its answer ``private, no-store`` without
keys (``edge.middleware``), and the page cache neither serves nor stores it (``reader.caching``).
A request without that cookie never loads a session or a user here, so readers' pages keep
their bytes, their headers and their queries whoever read them before.

The page's object is the first thing its view noted (``publishing.shown.shows``), on the views
that show one object. A post or digest readers cannot see has no public page: its address
answers 404, and there the bar names its status and offers *Preview latest draft* (see
``unpublished``).
"""
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.exceptions import NotRegistered
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.timezone import localtime
from taggit.models import Tag

from blog.models import Author, Post
from digests.models import Digest, Repository, Topic
from publishing.workflow import PublishableModel

#: What the purge view's ``<kind>`` names, as ``manage.py purge_edge --object`` does.
KINDS = {"post": Post, "digest": Digest, "author": Author, "tag": Tag, "topic": Topic, "repository": Repository}
KIND_OF = {model: kind for kind, model in KINDS.items()}
#: What makes someone a Publisher of each kind: the permission the Publishers group holds for its side.
PUBLISH_PERMISSION = {Post: Post.publish_permission, Author: Post.publish_permission, Tag: Post.publish_permission,
                      Digest: Digest.publish_permission, Topic: Digest.publish_permission,
                      Repository: Digest.publish_permission}
#: Views whose page is about one object, the first one they note.
ONE_OBJECT_VIEWS = {"blog:post", "blog:preview", "blog:author", "blog:tag", "digests:detail", "digests:preview",
                    "digests:topic", "digests:repository"}
PREVIEWS = {Post: "blog:preview", Digest: "digests:preview"}
#: Reader views that find a post or digest by slug among published ones; their 404 may hide one.
BY_SLUG = {"blog:post": Post, "digests:detail": Digest}


def for_request(request) -> dict | None:
    """The bar's context, or None when the request is not a signed-in staff user's (or there is none)."""
    if request is None or settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return None  # a reader: no session, no user, no query
    if not (request.user.is_active and request.user.is_staff):
        return None
    obj = page_object(request)
    context = {"here": request.get_full_path(), "admin_link": None, "status": "", "preview_url": "", "purge_url": ""}
    return context | (object_links(request, obj) if obj is not None else {})


def object_links(request, obj) -> dict:
    """Edit, Status, Preview latest draft (where readers cannot see it) and Purge (public, Publishers);
    nothing at all for someone who may not even view the object in the admin."""
    link = admin_link(request, obj)
    if link is None:
        return {}
    public, kind = is_public(obj), KIND_OF[type(obj)]
    on_preview = request.resolver_match.view_name in PREVIEWS.values()
    return {
        "admin_link": link,
        "status": status(obj),
        "preview_url": "" if public or on_preview else reverse(PREVIEWS[type(obj)], args=[obj.pk]),
        "purge_url": reverse("editbar:purge", args=[kind, obj.pk]) if public and may_purge(request.user, obj) else "",
    }


def page_object(request):
    """The one post, digest, author, tag, topic or repository the page shows, if it shows one."""
    match = request.resolver_match
    if match is None:
        return None
    shown = getattr(request, "shown", ())
    if match.view_name in ONE_OBJECT_VIEWS and shown and type(shown[0]) in KIND_OF:
        return shown[0]
    if match.view_name in BY_SLUG and not shown:
        return unpublished(BY_SLUG[match.view_name], match.kwargs.get("slug"))
    return None


def unpublished(model, slug):
    """The post or digest at a reader address that answered 404, whatever its status.

    What *Preview latest draft* means here: a save is a revision (django-reversion keeps the
    history), and a published item has no draft copy beside it -- an edit of it is live at once.
    So a public page never has a newer unpublished revision; the item readers cannot see
    (returned to draft, in review, scheduled, archived) answers 404 at its address, and that is
    where staff need its status and its latest saved state.
    """
    if not slug:
        return None
    return model.objects.filter(slug=slug).only("pk", "slug", "status", "published_at").first()


def is_public(obj) -> bool:
    return obj.is_published if isinstance(obj, PublishableModel) else True


def status(obj) -> str:
    """Draft, In review, Scheduled for <when>, Published, Archived; nothing for what has no workflow."""
    if not isinstance(obj, PublishableModel):
        return ""
    if obj.is_scheduled:
        return f"Scheduled for {date_format(localtime(obj.published_at), 'F j, Y, H:i T')}"
    return obj.get_status_display()


def admin_link(request, obj) -> tuple[str, str] | None:
    """("Edit post", its change page) if the user may change it, a view-only label if they may only
    look, None if neither (the admin's own rules: an editor may not change a published post)."""
    try:
        model_admin = admin.site.get_model_admin(type(obj))
    except NotRegistered:
        return None
    opts, kind = obj._meta, KIND_OF[type(obj)]
    url = reverse(f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    if model_admin.has_change_permission(request, obj):
        return f"Edit {kind}", url
    if model_admin.has_view_permission(request, obj):
        return f"View {kind} in the admin", url
    return None


def may_purge(user, obj) -> bool:
    """Publishers purge (superusers hold every permission)."""
    return user.has_perm(PUBLISH_PERMISSION[type(obj)])
