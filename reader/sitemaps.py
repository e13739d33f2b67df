"""``/sitemap.xml``: published content only, with the dates search engines use to re-crawl."""
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.sitemaps import Sitemap
from django.urls import reverse
from taggit.models import Tag

from blog.models import Author, Post, TaggedPost
from digests.models import Digest, Repository, Topic


class SiteSitemap(Sitemap):
    """Absolute URLs on SITE_URL, whatever host the request came in on."""

    limit = 5000

    def get_domain(self, site=None):
        return urlsplit(settings.SITE_URL).netloc

    def get_protocol(self, protocol=None):
        return urlsplit(settings.SITE_URL).scheme or "https"


class StaticSitemap(SiteSitemap):
    changefreq = "daily"

    def items(self):
        return ["home", "digests:index", "blog:index", "blog:tags", "digests:topics"]

    def location(self, item):
        return reverse(item)


class DigestSitemap(SiteSitemap):
    def items(self):
        return Digest.objects.published().only("slug", "updated_at").order_by("-date")

    def lastmod(self, item):
        return item.updated_at


class PostSitemap(SiteSitemap):
    def items(self):
        return Post.objects.published().only("slug", "updated_at")

    def lastmod(self, item):
        return item.updated_at


class TopicSitemap(SiteSitemap):
    def items(self):
        return Topic.objects.published()


class RepositorySitemap(SiteSitemap):
    def items(self):
        return Repository.objects.published()


class AuthorSitemap(SiteSitemap):
    def items(self):
        return Author.objects.published()


class TagSitemap(SiteSitemap):
    def items(self):
        used = TaggedPost.objects.filter(content_object__in=Post.objects.published()).values("tag_id")
        return Tag.objects.filter(pk__in=used).order_by("name")

    def location(self, item):
        return reverse("blog:tag", args=[item.slug])


SITEMAPS = {
    "pages": StaticSitemap,
    "digests": DigestSitemap,
    "posts": PostSitemap,
    "topics": TopicSitemap,
    "repositories": RepositorySitemap,
    "authors": AuthorSitemap,
    "tags": TagSitemap,
}
