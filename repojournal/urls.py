from django.contrib import admin
from django.contrib.sitemaps.views import sitemap
from django.urls import include, path, re_path

from reader import views
from reader.sitemaps import SITEMAPS

from . import health
from .api import not_found as api_not_found, urls as api_urls

# Patterns with a fixed prefix first: Django tries patterns in order, and an include mounted at ""
# can only refuse a path by trying its own patterns and raising Resolver404, which is dear. No two
# entries here can match the same path, so the order changes only what a request costs.
urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("api/v1/", api_urls()),
    re_path(r"^api/v1/", api_not_found),
    path("search/", views.search, name="search"),
    path("sitemap.xml", sitemap, {"sitemaps": SITEMAPS}, name="sitemap"),
    path("robots.txt", views.robots_txt, name="robots"),
    path("health/live/", health.live, name="health-live"),  # the edge routes by it (repojournal/health.py)
    path("health/ready/", health.ready_view(), name="health-ready"),  # the edge's grace follows it
    path("health/", health.everything_view(), name="health"),  # every dependency: monitoring, make status
    path("webhooks/", include("ingestion.urls")),
    path("media/", include("images.urls")),  # renditions on this machine's disk (MEDIA_URL); images/views.py
    path("edit-bar/", include("editbar.urls")),
    re_path(r"^(?=\.well-known/|nodeinfo/|ap/)", include("fediverse.urls")),  # WebFinger, NodeInfo, actors
    path("newsletters/", include("newsletters.urls")),  # sign-up, confirm, manage, unsubscribe (never cached)  # staff only: the edit bar's purge (editbar/)
    path("", include("digests.urls")),
    path("", include("blog.urls")),
]

handler404 = "reader.views.page_not_found"
handler500 = "reader.views.server_error"
