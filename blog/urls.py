from django.urls import path

from repojournal.syndication import feed_view

from . import feeds, views

app_name = "blog"

urlpatterns = [
    path("posts/", views.post_index, name="index"),
    path("posts/feed.<feedformat:fmt>", feed_view(feeds.PostsFeed), name="feed"),
    path("posts/<slug:slug>/", views.post_detail, name="post"),
    path("tags/", views.tag_index, name="tags"),
    path("tags/<slug:slug>/", views.tag_detail, name="tag"),
    path("tags/<slug:slug>/feed.<feedformat:fmt>", feed_view(feeds.TagFeed), name="tag_feed"),
    path("authors/<slug:slug>/", views.author_detail, name="author"),
    path("authors/<slug:slug>/feed.<feedformat:fmt>", feed_view(feeds.AuthorFeed), name="author_feed"),
    path("preview/posts/<int:pk>/", views.post_preview, name="preview"),
]
