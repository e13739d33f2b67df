"""Rows both sides added (issue 37, edit conflicts): a byline author another editor added after a
form was opened, added again in that form, is refused with the row's own message, never a 500
(the database's unique constraint), and the other editor's row stays. Helpers: ``test_edit_conflicts``."""
import pytest

from blog.factories import AuthorFactory
from blog.models import PostAuthor

from tests.blog.test_byline_admin import with_added_rows

from .test_edit_conflicts import change_url, post, signed_in  # noqa: F401 -- fixtures

pytestmark = pytest.mark.django_db


def test_the_same_byline_author_added_on_both_sides_is_refused_not_a_500(post, publisher, admin_form_data):
    dave = AuthorFactory(name="Dave")
    b = signed_in(publisher)
    page = b.get(change_url(post))
    PostAuthor.objects.create(post=post, author=dave, position=1)  # another editor added Dave meanwhile
    data = with_added_rows(page, admin_form_data(page), "post_authors", {"author": dave.pk})
    response = b.post(change_url(post), data)
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert [a.name for a in post.ordered_authors()] == ["Carol", "Dave"]



def test_a_byline_row_changed_to_an_author_added_meanwhile_is_refused_not_a_500(post, publisher, admin_form_data):
    dave = AuthorFactory(name="Dave")
    b = signed_in(publisher)
    page = b.get(change_url(post))
    PostAuthor.objects.create(post=post, author=dave, position=1)
    response = b.post(change_url(post), admin_form_data(page, **{"post_authors-0-author": str(dave.pk)}))
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert [a.name for a in post.ordered_authors()] == ["Carol", "Dave"]
