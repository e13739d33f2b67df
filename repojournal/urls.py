from django.contrib import admin
from django.urls import include, path, re_path

from . import views
from .api import not_found as api_not_found, urls as api_urls

admin.site.site_header = "RepoJournal editorial"
admin.site.site_title = "RepoJournal"
admin.site.index_title = "Newsroom"

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("api/v1/", api_urls()),
    re_path(r"^api/v1/", api_not_found),
    path("", include("digests.urls")),
    path("", include("blog.urls")),
    path("", include("ingestion.urls")),
]
