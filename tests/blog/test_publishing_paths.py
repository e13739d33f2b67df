"""Every way of publishing a post renders the same dated page and card (issue 19).

The post page prints the stored header and listings print the stored card
(blog/cards.py), so the publication time must be settled before they are rendered,
whichever path publishes: the admin change form, the changelist's bulk action, the
API, or a schedule.
"""
import datetime
import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format

from blog.factories import PostFactory
from blog.models import Post
from publishing.workflow import Status

from ..api.conftest import bearer

pytestmark = pytest.mark.django_db


def publish_by_form(client, post, admin_form_data):
    url = reverse("admin:blog_post_change", args=[post.pk])
    assert client.post(url, admin_form_data(client.get(url), status=Status.PUBLISHED)).status_code == 302


def publish_by_bulk_action(client, post, admin_form_data):
    changelist = reverse("admin:blog_post_changelist")
    client.post(changelist, {"action": "publish", ACTION_CHECKBOX_NAME: [str(post.pk)]})


def publish_by_api(client, post, admin_form_data):
    from accounts.models import ApiToken

    raw = ApiToken.issue(post._publisher, "t", ["publish"])[1]
    response = client.post(f"/api/v1/posts/{post.slug}/status", json.dumps({"status": "published"}),
                           content_type="application/json", **bearer(raw))
    assert response.status_code == 200, response.content


MACHINE_FORMAT = "Y-m-d\\TH:i:sO"  # as the templates write it
PATHS = {"form": publish_by_form, "bulk action": publish_by_bulk_action, "api": publish_by_api}


def dated(html: str, published_at: datetime.datetime) -> bool:
    moment = timezone.localtime(published_at)
    machine, human = date_format(moment, MACHINE_FORMAT), date_format(moment, "F j, Y")
    return f'<time datetime="{machine}">{human}</time>' in html and '<time datetime="">' not in html


@pytest.mark.parametrize("path", PATHS)
def test_every_publishing_path_dates_the_page_and_the_card(client, publisher, admin_form_data, path):
    post = PostFactory(status=Status.IN_REVIEW, published_at=None, title="Undated no more")
    post._publisher = publisher
    client.force_login(publisher)
    PATHS[path](client, post, admin_form_data)
    post = Post.objects.get(pk=post.pk)
    assert post.status == Status.PUBLISHED and post.published_at is not None
    assert dated(post.card_html, post.published_at) and dated(post.header_html, post.published_at)
    assert post.posting["datePublished"]
    client.logout()  # as a reader sees them
    assert dated(client.get(post.get_absolute_url()).content.decode(), post.published_at)
    assert dated(client.get(reverse("blog:index")).content.decode(), post.published_at)


def test_a_scheduled_post_is_rendered_with_its_scheduled_time(client, publisher):
    post = PostFactory(status=Status.IN_REVIEW, published_at=None)
    when = timezone.now() + datetime.timedelta(days=2)
    post.transition(publisher, Status.PUBLISHED, published_at=when)
    post = Post.objects.get(pk=post.pk)
    assert post.is_scheduled and dated(post.card_html, when) and dated(post.header_html, when)
    client.force_login(publisher)
    assert dated(client.get(reverse("blog:preview", args=[post.pk])).content.decode(), when)
