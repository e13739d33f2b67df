"""Feeds of The Wire: everything, one topic, one repository; full digests in each entry."""
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import reverse

from publishing.syndication import ReaderFeed

from .models import Digest, Repository, Topic


class WireFeed(ReaderFeed):
    """The newest published digests, each with its summary, body, action items and references."""

    title = "The Wire — RepoJournal"
    description = "Daily digests of what shipped in open-source repositories."
    author_name = "RepoJournal"

    def link(self):
        return reverse("digests:index")

    def digests(self, obj):
        return Digest.objects.published()

    def items(self, obj=None):
        return self.digests(obj).with_feed_data()[: self.limit]

    def item_title(self, item: Digest) -> str:
        return item.headline

    def item_description(self, item: Digest) -> str:
        return item.summary_html

    def item_content(self, item: Digest) -> str:
        return render_to_string("digests/feed_content.html", {"digest": item})

    def item_authors(self, item: Digest) -> list[tuple[str, str]]:
        return [(item.byline, "")]

    def item_categories(self, item: Digest) -> list[str]:
        return [item.topic.name]


class TopicFeed(WireFeed):
    """The Wire for one topic."""

    def get_object(self, request, slug: str):
        return get_object_or_404(Topic.objects.published(), slug=slug)

    def title(self, obj: Topic) -> str:
        return f"The Wire: {obj.name} — RepoJournal"

    def link(self, obj: Topic) -> str:
        return obj.get_absolute_url()

    def digests(self, obj: Topic):
        return Digest.objects.published().filter(topic=obj)


class RepositoryFeed(WireFeed):
    """The Wire's digests citing one repository."""

    def get_object(self, request, owner: str, name: str):
        return get_object_or_404(Repository.objects.published(), full_name__iexact=f"{owner}/{name}")

    def title(self, obj: Repository) -> str:
        return f"The Wire: {obj.full_name} — RepoJournal"

    def link(self, obj: Repository) -> str:
        return obj.get_absolute_url()

    def digests(self, obj: Repository):
        return Digest.objects.published().citing(obj)
