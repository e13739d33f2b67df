"""Byline order in the admin is the order the editor sees (issue 19).

Rows are posted as a browser posts them: the existing rows as rendered, and each
"Add another author" row cloned from the inline's empty form with its initial values.
"""
import pytest
from django.urls import reverse

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def with_added_rows(response, data: dict, prefix: str, *rows: dict) -> dict:
    """`data` plus `rows` added as the admin's "Add another" does: a copy of the empty form (its
    initial values, as rendered) with the editor's choices filled in."""
    formset = next(inline.formset for inline in response.context["inline_admin_formsets"]
                   if inline.formset.prefix == prefix)
    total = int(data[f"{prefix}-TOTAL_FORMS"])
    for offset, choices in enumerate(rows):
        empty = formset.empty_form
        for name in empty.fields:
            value = empty[name].value()
            data[empty[name].html_name.replace("__prefix__", str(total + offset))] = "" if value is None else str(value)
        data.update({f"{prefix}-{total + offset}-{name}": str(value) for name, value in choices.items()})
    data[f"{prefix}-TOTAL_FORMS"] = str(total + len(rows))
    return data


def names(post) -> list[str]:
    return [author.name for author in Post.objects.get(pk=post.pk).ordered_authors()]


def test_authors_added_to_a_new_post_keep_the_order_entered(client, editor, admin_form_data):
    aaron, benjamin = AuthorFactory(name="Aaron"), AuthorFactory(name="Benjamin")
    client.force_login(editor)
    url = reverse("admin:blog_post_add")
    page = client.get(url)
    data = admin_form_data(page, title="Two authors", slug="two-authors", body="Text", status=Status.DRAFT,
                           **{"post_authors-0-author": str(aaron.pk), "post_authors-TOTAL_FORMS": "1"})
    data = with_added_rows(page, data, "post_authors", {"author": benjamin.pk})
    response = client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    post = Post.objects.get(slug="two-authors")
    assert names(post) == ["Aaron", "Benjamin"]
    assert [link.position for link in post.post_authors.all()] == [0, 1]
    assert post.authors_tags["authors"][0]["name"] == "Aaron" and post.card_html.index("Aaron") < post.card_html.index("Benjamin")


def test_authors_added_to_an_existing_byline_go_at_its_end(client, editor, admin_form_data):
    carol, dave = AuthorFactory(name="Carol"), AuthorFactory(name="Dave")
    aaron, benjamin = AuthorFactory(name="Aaron"), AuthorFactory(name="Benjamin")
    post = PostFactory(status=Status.DRAFT, published_at=None, authors=[carol, dave])
    client.force_login(editor)
    url = reverse("admin:blog_post_change", args=[post.pk])
    page = client.get(url)
    data = with_added_rows(page, admin_form_data(page), "post_authors", {"author": aaron.pk}, {"author": benjamin.pk})
    response = client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    assert names(post) == ["Carol", "Dave", "Aaron", "Benjamin"]
    shown = client.get(url).context["inline_admin_formsets"][0].formset.forms  # what the editor sees next time
    assert [form.instance.author.name for form in shown] == ["Carol", "Dave", "Aaron", "Benjamin"]


def test_positions_the_editor_types_still_decide(client, editor, admin_form_data):
    first, second = AuthorFactory(name="First"), AuthorFactory(name="Second")
    post = PostFactory(status=Status.DRAFT, published_at=None, authors=[first])
    client.force_login(editor)
    url = reverse("admin:blog_post_change", args=[post.pk])
    page = client.get(url)
    data = with_added_rows(page, admin_form_data(page, **{"post_authors-0-position": "5"}), "post_authors",
                           {"author": second.pk, "position": 1})
    assert client.post(url, data).status_code == 302
    assert names(post) == ["Second", "First"]
