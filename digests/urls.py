from django.urls import include, path

from repojournal.syndication import feed_view

from . import feeds, views

app_name = "digests"

# Grouped by first path segment, so a request for another group is refused by one prefix test
# instead of by every pattern in turn (resolving a blog page walked all of these first).
urlpatterns = [
    path("wire/", include([
        path("", views.wire_index, name="index"),
        path("feed.<feedformat:fmt>", feed_view(feeds.WireFeed), name="feed"),
        path("<slug:slug>/", views.digest_detail, name="detail"),
    ])),
    path("topics/", include([
        path("", views.topic_index, name="topics"),
        path("<slug:slug>/", views.topic_detail, name="topic"),
        path("<slug:slug>/feed.<feedformat:fmt>", feed_view(feeds.TopicFeed), name="topic_feed"),
    ])),
    path("repos/<str:owner>/<str:name>/", include([
        path("", views.repository_detail, name="repository"),
        path("feed.<feedformat:fmt>", feed_view(feeds.RepositoryFeed), name="repository_feed"),
    ])),
    path("preview/digests/<int:pk>/", views.digest_preview, name="preview"),
]
