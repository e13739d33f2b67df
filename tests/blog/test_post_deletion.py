"""Deleting a post deletes what hangs on it, and stores nothing new for it on the way."""
import pytest
from django.db import connection

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostCard

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bulk", [False, True], ids=["one", "queryset"])
def test_deleting_a_post_with_a_byline_leaves_no_card_behind(bulk):
    """Its bylines went first and re-drew the card of the post being deleted (a dangling foreign key:
    SQLite's check and PostgreSQL's deferred constraint refused the deletion's commit)."""
    post = PostFactory(authors=[AuthorFactory(), AuthorFactory()], tags=["a"])
    Post.objects.filter(pk=post.pk).delete() if bulk else post.delete()
    assert not PostCard.objects.filter(post_id=post.pk).exists()
    connection.check_constraints()
