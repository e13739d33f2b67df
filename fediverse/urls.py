"""Discovery (``/.well-known/``, ``/nodeinfo/``) and the actors' stable ids (``/ap/``).

Mounted once in repojournal/urls.py behind a look-ahead on those three prefixes, so other paths are
refused without trying these patterns. The inboxes the actor documents name are not built yet.
"""
from django.urls import path

from . import views

app_name = "fediverse"

urlpatterns = [
    path(".well-known/webfinger", views.webfinger, name="webfinger"),
    path(".well-known/host-meta", views.host_meta, name="host-meta"),
    path(".well-known/nodeinfo", views.nodeinfo_links, name="nodeinfo-links"),
    path("nodeinfo/2.1", views.nodeinfo, name="nodeinfo"),
    path("ap/actors/<str:handle>", views.actor, name="actor"),
    path("ap/actors/<str:handle>/outbox", views.outbox, name="outbox"),
    path("ap/actors/<str:handle>/followers", views.followers, name="followers"),
]
