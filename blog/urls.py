from django.urls import include, path, register_converter

from repojournal.syndication import feed_view

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

# Grouped by first path segment, as in digests/urls.py: a miss costs one prefix test per group.
urlpatterns = [
    path("posts/", include([
        path("", views.post_index, name="index"),
        path("feed.<feedformat:fmt>", feed_view(feeds.PostsFeed), name="feed"),
        path("<slug:slug>/", views.post_detail, name="post"),
    ])),
    path("tags/", include([
        path("", views.tag_index, name="tags"),
        path("<tagslug:slug>/", views.tag_detail, name="tag"),
        path("<tagslug:slug>/feed.<feedformat:fmt>", feed_view(feeds.TagFeed), name="tag_feed"),
    ])),
    path("authors/<slug:slug>/", include([
        path("", views.author_detail, name="author"),
        path("feed.<feedformat:fmt>", feed_view(feeds.AuthorFeed), name="author_feed"),
    ])),
    path("preview/posts/<int:pk>/", views.post_preview, name="preview"),
]
