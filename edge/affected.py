"""Which surrogate keys a write changes: the purge side of ``edge.keys``.

An edit of a published post changes the pages that show it, and those pages
carry its key (``post-12``): its own page, every listing, feed and related list
holding its card. Only when a post joins or leaves listings -- it is published,
unpublished, deleted, re-dated, or a byline or tag is added or removed -- do
the listings themselves move (``posts``, its tags' and authors' pages). So an
edit leaves an unrelated post's page, and tag pages it is not on, cached.
Digests likewise: ``digest-7``, and on joining or leaving, ``digests``, its
topic and the repositories it cites.

``search`` and ``sitemap`` (and the API's ``api-posts`` / ``api-digests``) go with
every public change of their kind: they list everything and print dates.
Which writes are public at all is ``reader.public_changes``'s decision.
"""
from taggit.models import Tag

from blog.models import Author, Post, PostAuthor, TaggedPost
from digests.models import ActionItem, Digest, DigestReference, FAQEntry, Reference, Repository, Topic
from publishing.workflow import Status

from .keys import SITE, tag_key

POST_EVERYWHERE = {"post-any", "api-posts", "search", "sitemap"}
DIGEST_EVERYWHERE = {"digest-any", "api-digests", "search", "sitemap"}


def joins_or_leaves(instance, deleted: bool) -> bool:
    """Whether a saved post or digest moved in or out of listings (or to another place in them)."""
    before = getattr(instance, "_edge_before", None)
    return deleted or before is None or before != (instance.status, instance.published_at)


def post_keys(post, *, listings: bool) -> set[str]:
    keys = {f"post-{post.pk}", *POST_EVERYWHERE}
    if listings:
        tags = TaggedPost.objects.filter(content_object_id=post.pk).values_list("tag__name", flat=True)
        authors = PostAuthor.objects.filter(post_id=post.pk).values_list("author_id", flat=True)
        keys |= {"posts", "tags", *map(tag_key, tags), *(f"author-{pk}" for pk in authors)}
    return keys


def digest_keys(digest, *, listings: bool) -> set[str]:
    keys = {f"digest-{digest.pk}", *DIGEST_EVERYWHERE}
    if listings:
        repositories = digest.repository_links.values_list("repository_id", flat=True) if digest.pk else ()
        keys |= {"digests", "topics", f"topic-{digest.topic_id}", *(f"repo-{pk}" for pk in repositories)}
    return keys


def published_post_keys(posts) -> set[str]:
    return {f"post-{pk}" for pk in posts.filter(status=Status.PUBLISHED).values_list("pk", flat=True)}


def keys_for_write(sender, instance, *, deleted: bool = False) -> set[str]:
    """The keys of the pages showing `instance`, a row of `sender` just saved or deleted (and public)."""
    if sender is Post:
        return post_keys(instance, listings=joins_or_leaves(instance, deleted))
    if sender is Digest:
        return digest_keys(instance, listings=joins_or_leaves(instance, deleted))
    if sender is PostAuthor:
        return {f"post-{instance.post_id}", f"author-{instance.author_id}", *POST_EVERYWHERE}
    if sender is TaggedPost:
        return {f"post-{instance.content_object_id}", tag_key(instance.tag.name), "tags", *POST_EVERYWHERE}
    if sender in (DigestReference, ActionItem, FAQEntry):
        keys = {f"digest-{instance.digest_id}", *DIGEST_EVERYWHERE}
        if sender is DigestReference:
            keys.add(f"repo-{instance.reference.repository_id}")
        return keys
    if sender is Author:  # the byline on each of its posts' cards
        return {f"author-{instance.pk}", *POST_EVERYWHERE} | published_post_keys(instance.posts.all())
    if sender is Tag:
        names = {instance.name, getattr(instance, "_edge_name_before", None) or instance.name}
        posts = Post.objects.filter(tagged_items__tag=instance)
        return {"tags", *map(tag_key, names), *POST_EVERYWHERE} | published_post_keys(posts)
    if sender is Reference:
        return {f"repo-{instance.repository_id}", "api-digests", "search"}
    if sender is Repository:
        return {f"repo-{instance.pk}", f"topic-{instance.topic_id}", "api-digests", "search", "sitemap"}
    if sender is Topic:
        return {f"topic-{instance.pk}", "topics", "api-digests", "sitemap"}
    return {SITE}


def keys_for_bulk_write(model, pks) -> set[str]:
    """Rows of `model` written in bulk (``publishing.signals.content_changed``); unknown rows: everything."""
    if pks is None:
        return {SITE}
    if model is Post:
        return published_post_keys(Post.objects.filter(pk__in=pks)) | POST_EVERYWHERE
    if model is Digest:
        published = Digest.objects.filter(pk__in=pks, status=Status.PUBLISHED).values_list("pk", flat=True)
        return {f"digest-{pk}" for pk in published} | DIGEST_EVERYWHERE
    if model is Reference:
        cited = DigestReference.objects.filter(reference__in=pks, digest__status=Status.PUBLISHED)
        return {f"repo-{pk}" for pk in cited.values_list("reference__repository_id", flat=True)} | {
            "api-digests", "search"}
    return {SITE}


def keys_for_objects(objects) -> set[str]:
    """What "purge this object" means (admin action, ``purge_edge --object``): its pages and listings."""
    keys = set()
    for obj in objects:
        if isinstance(obj, Post):
            keys |= post_keys(obj, listings=True)
        elif isinstance(obj, Digest):
            keys |= digest_keys(obj, listings=True)
        else:
            keys |= keys_for_write(type(obj), obj)
    return keys
