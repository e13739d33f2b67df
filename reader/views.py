"""Pages that span both apps: home, search, robots.txt and the error pages."""
from django.conf import settings
from django.http import HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from blog.models import Post
from digests.models import Digest

from . import search as site_search
from publishing.compiled import Statement
from publishing.shown import shows
from publishing.syndication import feed_links

HOME_DIGESTS = 10
HOME_POSTS = 14
#: The home page's two lists, compiled once per process (publishing.compiled).
HOME_DIGEST_CARDS = Statement(lambda now: Digest.objects.published(now).for_cards()[:HOME_DIGESTS],
                              now=Digest._meta.get_field("published_at"))
HOME_POST_CARDS = Statement(lambda now: Post.objects.published(now).cards()[:HOME_POSTS],
                            now=Post._meta.get_field("published_at"))


def home(request):
    now = timezone.now()
    digests, posts = HOME_DIGEST_CARDS.fetch(now=now), HOME_POST_CARDS.fetch(now=now)
    shows(request, digests, posts)
    return render(
        request,
        "home.html",
        {
            "digests": digests,
            "posts": posts,
            "feeds": feed_links("The Wire", "digests:feed") + feed_links("RepoJournal posts", "blog:feed"),
        },
    )


def search(request):
    """``/search/?q=``: published posts, digests and references matching the query."""
    results = site_search.search(request.GET.get("q"))
    return render(request, "search.html", {"results": results, "query": results.query})


@require_GET
def robots_txt(request):
    sitemap = f"{settings.SITE_URL}{reverse('sitemap')}"
    lines = ["User-agent: *", "Disallow: /admin/", "Disallow: /preview/", "Disallow: /search/", f"Sitemap: {sitemap}"]
    return render(request, "robots.txt", {"lines": lines}, content_type="text/plain; charset=utf-8")


def page_not_found(request, exception):
    return render(request, "404.html", status=404)


def server_error(request):
    """The 500 page: a static template, no context processors, no database access."""
    return HttpResponseServerError(loader.render_to_string("500.html"))
