"""Reader pages of The Wire. Public views reach content only through published()."""
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, render

from .models import Digest, Repository, Topic


def render_digest(request, digest: Digest, *, preview: bool = False):
    return render(request, "digests/digest_detail.html", {"digest": digest, "preview": preview, "preview_status": digest.display_status})


def digest_detail(request, slug: str):
    digest = get_object_or_404(Digest.objects.published().with_page_data(), slug=slug)
    return render_digest(request, digest)


@staff_member_required
def digest_preview(request, pk: int):
    """Staff see any digest, whatever its status, exactly as readers will."""
    return render_digest(request, get_object_or_404(Digest.objects.with_page_data(), pk=pk), preview=True)


def topic_detail(request, slug: str):
    topic = get_object_or_404(Topic, slug=slug)
    digests = topic.digests.published().with_listing_data()
    return render(request, "digests/topic_detail.html", {"topic": topic, "digests": digests})


def repository_detail(request, owner: str, name: str):
    repository = get_object_or_404(Repository, full_name__iexact=f"{owner}/{name}")
    digests = Digest.objects.published().with_listing_data().filter(references__repository=repository).distinct()
    return render(request, "digests/repository_detail.html", {"repository": repository, "digests": digests})
