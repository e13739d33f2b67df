"""Which writes change what readers see.

Most writes change nothing public: every webhook and poll saves references no
published digest cites, and editors save drafts all day. Copies of public output
(the page cache, an edge cache) should be dropped only for a write that changes
it: a post or digest that is, or was until this write, published (scheduled
included: its time decides when pages change), a child row of one, a reference a
published digest cites, or a topic, repository, author or tag readers can reach.

``remember_public_state`` runs before each save (``pre_save``) so that a post
moving from published to draft still counts: after the save its row no longer
says it was public.
"""
from taggit.models import Tag

from blog.models import Author, Post, PostAuthor, TaggedPost
from digests.models import ActionItem, Digest, DigestReference, FAQEntry, Reference, Repository, Topic
from publishing.workflow import Status

PUBLISHABLE = (Post, Digest)
#: Child rows and the name of the field pointing at their post or digest.
CHILDREN = {PostAuthor: ("post", Post), TaggedPost: ("content_object", Post), DigestReference: ("digest", Digest),
            ActionItem: ("digest", Digest), FAQEntry: ("digest", Digest)}
#: Everything a public page shows.
CONTENT_MODELS = [*PUBLISHABLE, *CHILDREN, Reference, Repository, Topic, Author, Tag]


def remember_public_state(sender, instance, raw=False, **kwargs) -> None:
    """Before a post or digest is saved: note whether its stored row is published."""
    if not raw and instance.pk is not None:
        instance._was_published = sender._base_manager.filter(pk=instance.pk, status=Status.PUBLISHED).exists()


def is_public(sender, instance) -> bool:
    """Whether saving or deleting `instance` (of model `sender`) changes some public page."""
    if sender in PUBLISHABLE:
        return instance.status == Status.PUBLISHED or getattr(instance, "_was_published", False)
    if sender in CHILDREN:
        field, parent = CHILDREN[sender]
        return parent._base_manager.filter(pk=getattr(instance, f"{field}_id"), status=Status.PUBLISHED).exists()
    if sender is Reference:
        return cited_publicly(Reference.objects.filter(pk=instance.pk))
    if sender in (Repository, Topic, Author):
        return sender.objects.published().filter(pk=instance.pk).exists()
    if sender is Tag:
        return TaggedPost.objects.filter(tag=instance, content_object__status=Status.PUBLISHED).exists()
    return True


def any_public(model, pks) -> bool:
    """After a bulk write of these rows of `model` (pks None: unknown rows), whether any shows publicly."""
    if pks is None or model not in (*PUBLISHABLE, Reference):
        return True
    if model is Reference:
        return cited_publicly(Reference.objects.filter(pk__in=pks))
    return model._base_manager.filter(pk__in=pks, status=Status.PUBLISHED).exists()


def cited_publicly(references) -> bool:
    """Whether a published (or scheduled) digest cites any of `references`: only then do readers see them."""
    return DigestReference.objects.filter(reference__in=references, digest__status=Status.PUBLISHED).exists()
