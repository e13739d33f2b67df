from django.conf import settings
from django.contrib import admin
from django.contrib.sitemaps.views import sitemap
from django.urls import include, path, re_path
from health_check.views import HealthCheckView

from reader import views
from reader.sitemaps import SITEMAPS

from .api import not_found as api_not_found, urls as api_urls

# /health/: the health endpoint the edge probes (deploy/varnish/default.vcl) and operators read.
# django-health-check answers 200 while the database, the cache and the Celery broker answer,
# 500 otherwise, and never lets a cache keep the answer: Varnish stops sending readers to an
# instance whose probe fails. Celery workers are not checked here on purpose: a stopped
# worker delays purges but must not take every app instance out of the edge.
def health_broker_client():
    """A fresh asyncio client for the broker (the check closes it after its ping)."""
    from redis.asyncio import Redis

    return Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)


def health_checks() -> list:
    found: list = ["health_check.checks.Database", "health_check.checks.Cache"]
    if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        found.append(("health_check.contrib.redis.Redis", {"client_factory": health_broker_client}))
    return found


def health_view():
    """The health view with this deployment's checks, mounted at /health/ below."""
    return HealthCheckView.as_view(checks=health_checks())


admin.site.site_header = "RepoJournal editorial"
admin.site.site_title = "RepoJournal"
admin.site.index_title = "Newsroom"

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
    path("health/", health_view(), name="health"),  # probed by the edge (deploy/varnish/default.vcl)
    path("webhooks/", include("ingestion.urls")),
    path("", include("digests.urls")),
    path("", include("blog.urls")),
]

handler404 = "reader.views.page_not_found"
handler500 = "reader.views.server_error"
