"""Pages that span both apps."""
from django.shortcuts import render

from blog.models import Post
from digests.models import Digest

HOME_DIGESTS = 10
HOME_POSTS = 14


def home(request):
    return render(
        request,
        "home.html",
        {
            "digests": Digest.objects.published().with_listing_data()[:HOME_DIGESTS],
            "posts": Post.objects.published().with_listing_data()[:HOME_POSTS],
        },
    )
