from django.urls import path

from publishing.syndication import feed_view

from . import feeds, views

app_name = "digests"

urlpatterns = [
    path("wire/", views.wire_index, name="index"),
    path("wire/feed.<feedformat:fmt>", feed_view(feeds.WireFeed), name="feed"),
    path("wire/<slug:slug>/", views.digest_detail, name="detail"),
    path("wire/<slug:slug>/card-<str:key>.png", views.digest_card, name="card"),
    path("topics/", views.topic_index, name="topics"),
    path("topics/<slug:slug>/", views.topic_detail, name="topic"),
    path("topics/<slug:slug>/feed.<feedformat:fmt>", feed_view(feeds.TopicFeed), name="topic_feed"),
    path("repos/<str:owner>/<str:name>/", views.repository_detail, name="repository"),
    path(
        "repos/<str:owner>/<str:name>/feed.<feedformat:fmt>",
        feed_view(feeds.RepositoryFeed),
        name="repository_feed",
    ),
    path("preview/digests/<int:pk>/", views.digest_preview, name="preview"),
]
