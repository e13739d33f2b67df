from django.contrib import admin
from django.urls import include, path

from . import views

admin.site.site_header = "RepoJournal editorial"
admin.site.site_title = "RepoJournal"
admin.site.index_title = "Newsroom"

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("", include("digests.urls")),
    path("", include("blog.urls")),
    path("", include("ingestion.urls")),
]
