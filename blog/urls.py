from django.urls import path, register_converter

from publishing.syndication import feed_view

from . import feeds, views

app_name = "blog"


class TagSlugConverter:
    """A tag's slug: django-taggit keeps non-ASCII letters in slugs ("café" stays "café"),
    which Django's ``slug`` converter (ASCII only) would refuse to reverse or resolve."""

    regex = r"[-\w]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(TagSlugConverter, "tagslug")

urlpatterns = [
    path("posts/", views.post_index, name="index"),
    path("posts/feed.<feedformat:fmt>", feed_view(feeds.PostsFeed), name="feed"),
    path("posts/<slug:slug>/", views.post_detail, name="post"),
    path("posts/<slug:slug>/card-<str:key>.png", views.post_card, name="card"),
    path("tags/", views.tag_index, name="tags"),
    path("tags/<tagslug:slug>/", views.tag_detail, name="tag"),
    path("tags/<tagslug:slug>/feed.<feedformat:fmt>", feed_view(feeds.TagFeed), name="tag_feed"),
    path("authors/<slug:slug>/", views.author_detail, name="author"),
    path("authors/<slug:slug>/feed.<feedformat:fmt>", feed_view(feeds.AuthorFeed), name="author_feed"),
    path("preview/posts/<int:pk>/", views.post_preview, name="preview"),
]
