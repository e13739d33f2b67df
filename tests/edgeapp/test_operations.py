"""Purging by hand (``purge_edge``, the admin action), and keys that cost no query."""
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from blog.factories import PostFactory
from edge import outbox
from edge.keys import tag_key
from edge.models import Purge

pytestmark = pytest.mark.django_db


@pytest.fixture
def varnish(settings, httpserver):
    settings.EDGE_PURGE_BACKEND = "varnish"
    settings.EDGE_VARNISH_URLS = [httpserver.url_for("/").rstrip("/")]
    httpserver.expect_request("/", method="PURGE").respond_with_data("ok")
    httpserver.expect_request("/posts/hello/", method="PURGE").respond_with_data("ok")
    return httpserver


def purged_keys(server) -> set[str]:
    return {key for request, _ in server.log for key in request.headers.get("xkey-purge", "").split()}


def test_purge_edge_by_object_key_url_and_all(content, varnish):
    call_command("purge_edge", "--object", f"post:{content.first.pk}", "--key", "digests", "--url", "/posts/hello/")
    assert {f"post-{content.first.pk}", "posts", tag_key("python"), "digests"} <= purged_keys(varnish)
    assert any(request.path == "/posts/hello/" for request, _ in varnish.log)
    call_command("purge_edge", "--all")
    assert "site" in purged_keys(varnish)


@pytest.mark.parametrize("arguments", [[], ["--object", "post:999999"], ["--object", "page:1"], ["--url", "posts/"]])
def test_purge_edge_refuses_what_it_cannot_purge(content, varnish, arguments):
    with pytest.raises(CommandError):
        call_command("purge_edge", *arguments)


def test_purge_edge_reports_an_edge_that_is_down(content, settings):
    settings.EDGE_PURGE_BACKEND = "varnish"
    settings.EDGE_VARNISH_URLS = ["http://127.0.0.1:9"]
    with pytest.raises(CommandError, match="127.0.0.1:9"):
        call_command("purge_edge", "--all")


def test_the_admin_action_purges_the_selected_posts(content, admin_client, monkeypatch,
                                                    django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(outbox, "queue", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:blog_post_changelist"),
                                     {"action": "purge_from_edge", "_selected_action": [content.first.pk]}, follow=True)
    assert response.status_code == 200
    [row] = Purge.objects.all()
    assert queued == [row.pk] and {f"post-{content.first.pk}", "posts"} <= set(row.keys)
    assert f"post-{content.second.pk}" not in row.keys
    assert "purge_from_edge" in dict(admin_client.get(reverse("admin:digests_digest_changelist"))
                                     .context["action_form"].fields["action"].choices)


@pytest.mark.parametrize("path", ["/", "/posts/", "/posts/feed.atom", "/wire/", "TAG", "POST"])
def test_keys_cost_no_query_and_do_not_grow_with_the_listing(client, content, settings, path):
    """The same queries with and without the edge middlewares, for 2 posts and for 12."""
    settings.PAGE_CACHE_ENABLED = False  # count what the view runs
    tag = content.first.tags.get()
    path = {"TAG": reverse("blog:tag", args=[tag.slug]), "POST": content.first.get_absolute_url()}.get(path, path)
    without = [name for name in settings.MIDDLEWARE if not name.startswith("edge.")]

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        return len(queries)

    with_keys = count()
    settings.MIDDLEWARE = without
    assert count() == with_keys
    settings.MIDDLEWARE = [*without[:1], "edge.middleware.EdgeCacheMiddleware", *without[1:],
                           "edge.middleware.SurrogateKeyMiddleware"]
    for _ in range(10):
        PostFactory(tags=["python"])
    assert count() == with_keys


@pytest.mark.parametrize("changelist", ["admin:blog_post_changelist", "admin:digests_digest_changelist"])
def test_only_publishers_may_purge_from_the_admin_as_from_the_edit_bar(client, content, editor, publisher,
                                                                      changelist):
    def actions(user) -> dict:
        client.force_login(user)
        return dict(client.get(reverse(changelist)).context["action_form"].fields["action"].choices)

    assert "purge_from_edge" in actions(publisher)
    assert "purge_from_edge" not in actions(editor)
    response = client.post(reverse("admin:blog_post_changelist"),  # the editor, sending it anyway
                           {"action": "purge_from_edge", "_selected_action": [content.first.pk]}, follow=True)
    assert response.status_code == 200 and not Purge.objects.exists()
