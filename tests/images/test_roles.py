"""What the editorial groups may do with images (images/migrations/0002_editorial_permissions.py).

Before that migration neither group held any images permission: a Publisher's upload page was a 404
and only a superuser could put an image in a post.
"""
from importlib import import_module

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from blog.factories import AuthorFactory
from blog.models import Post
from images import renditions
from images.models import Image
from publishing.workflow import Status

from tests.conftest import editorial_group

from .conftest import picture_bytes

pytestmark = pytest.mark.django_db

MIGRATION = import_module("images.migrations.0002_editorial_permissions")


def image_codenames(name: str) -> set[str]:
    return set(Group.objects.get(name=name).permissions.filter(content_type__app_label="images")
               .values_list("codename", flat=True))


def test_editors_view_upload_and_describe_images_and_publishers_also_delete_them():
    assert image_codenames("Editors") == {"view_image", "add_image", "change_image"}
    assert image_codenames("Publishers") == {"view_image", "add_image", "change_image", "delete_image"}


def test_the_grant_is_idempotent_and_unapplying_takes_back_only_its_own():
    before = {name: set(Group.objects.get(name=name).permissions.values_list("pk", flat=True))
              for name in ("Editors", "Publishers")}
    MIGRATION.grant(django_apps, None)
    assert {name: set(Group.objects.get(name=name).permissions.values_list("pk", flat=True))
            for name in before} == before
    MIGRATION.revoke(django_apps, None)
    assert image_codenames("Editors") == image_codenames("Publishers") == set()
    assert Group.objects.get(name="Editors").permissions.filter(codename="change_post").exists()  # the rest stays
    MIGRATION.grant(django_apps, None)
    assert image_codenames("Publishers") == {"view_image", "add_image", "change_image", "delete_image"}


def test_groups_remade_after_a_flush_get_the_images_grant_too():
    """tests/conftest.py's ``editorial_group`` runs every editorial data migration again, this one included."""
    Group.objects.filter(name__in=["Editors", "Publishers"]).delete()
    assert editorial_group("Editors").permissions.filter(codename="add_image").exists()
    assert image_codenames("Publishers") == {"view_image", "add_image", "change_image", "delete_image"}


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_each_role_reaches_the_upload_page_and_the_images_list(client, request, role):
    client.force_login(request.getfixturevalue(role))
    assert client.get(reverse("admin:images_image_upload")).status_code == 200
    assert client.get(reverse("admin:images_image_changelist")).status_code == 200
    assert f'href="{reverse("admin:images_image_changelist")}"' in \
        client.get(reverse("admin:app_list", args=["images"])).content.decode()


def test_an_editor_describes_an_image_but_only_a_publisher_deletes_one(client, editor, publisher, upload,
                                                                      admin_form_data):
    image, = upload(alts=["Before"])
    client.force_login(editor)
    change = reverse("admin:images_image_change", args=[image.pk])
    response = client.post(change, admin_form_data(client.get(change), alt="After", credit="Photo: Ann"))
    assert response.status_code == 302
    image.refresh_from_db()
    assert (image.alt, image.credit) == ("After", "Photo: Ann")
    delete = reverse("admin:images_image_delete", args=[image.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert Image.objects.filter(pk=image.pk).exists()
    client.force_login(publisher)
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert not Image.objects.filter(pk=image.pk).exists()


def test_an_editor_uploads_an_image_and_puts_it_in_a_post(client, editor, admin_form_data,
                                                         django_capture_on_commit_callbacks):
    """The issue's "done when": all through the admin, as an Editor, no superuser anywhere."""
    author = AuthorFactory(name="Ada")
    client.force_login(editor)
    with django_capture_on_commit_callbacks(execute=False):  # the renditions task, made below as the worker would
        response = client.post(reverse("admin:images_image_upload"), {
            "files": [SimpleUploadedFile("chart.png", picture_bytes())], "alt": ["A chart"], "caption": "",
            "credit": ""})
    assert response.status_code == 302, response.content.decode()[:500]
    image = Image.objects.get()
    assert image.uploaded_by == editor
    renditions.make(image)

    # The picker: the images list in a popup, then the chosen image's Markdown.
    popup = client.get(reverse("admin:images_image_changelist"), {"_to_field": "id", "_popup": "1"})
    assert f'data-popup-opener="{image.pk}"' in popup.content.decode()
    markdown = client.get(reverse("admin:images_image_markdown", args=[image.pk])).content.decode()
    assert markdown == f"![A chart](image:{image.pk})"

    add = reverse("admin:blog_post_add")
    response = client.post(add, admin_form_data(
        client.get(add), title="With a chart", slug="with-a-chart", status=Status.DRAFT, lead_image=str(image.pk),
        body=f"The numbers:\n\n{markdown}\n", **{"post_authors-0-author": str(author.pk),
                                                 "post_authors-TOTAL_FORMS": "1"}))
    assert response.status_code == 302, response.context and response.context["errors"]
    post = Post.objects.get(slug="with-a-chart")
    assert post.lead_image == image and post.created_by == editor
    assert [(use.image_id, use.published) for use in post.image_uses.all()] == [(image.pk, False)]
    preview = client.get(reverse("blog:preview", args=[post.pk])).content.decode()
    assert preview.count("<picture>") == 2 and 'alt="A chart"' in preview  # the lead image and the body's
    assert "With a chart" in client.get(reverse("admin:images_image_change", args=[image.pk])).content.decode()
