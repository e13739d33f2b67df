"""Reader pages of the blog. Public views reach posts only through published()."""
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, render

from .models import Author, Post


def render_post(request, post: Post, *, preview: bool = False):
    return render(request, "blog/post_detail.html", {"post": post, "preview": preview, "preview_status": post.display_status})


def post_detail(request, slug: str):
    return render_post(request, get_object_or_404(Post.objects.published().with_listing_data(), slug=slug))


@staff_member_required
def post_preview(request, pk: int):
    """Staff see any post, whatever its status, exactly as readers will."""
    return render_post(request, get_object_or_404(Post.objects.with_listing_data(), pk=pk), preview=True)


def author_detail(request, slug: str):
    author = get_object_or_404(Author, slug=slug)
    posts = Post.objects.published().with_listing_data().filter(authors=author)
    return render(request, "blog/author_detail.html", {"author": author, "posts": posts})
