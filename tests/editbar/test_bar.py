"""What the edit bar shows, to whom, on which page (issue 26)."""
import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

BAR = re.compile(r'<aside class="editbar" id="editbar".*?</aside>', re.S)


def bar_of(response) -> str:
    """The bar's markup in a page, or ""."""
    found = BAR.search(response.content.decode())
    return found.group(0) if found else ""


def links(bar: str) -> dict[str, str]:
    """The bar's links, by their text."""
    return {text: href for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', bar)}


def page_of(content, name: str) -> str:
    return {
        "post": content.post.get_absolute_url(), "digest": content.digest.get_absolute_url(),
        "author": content.author.get_absolute_url(), "tag": reverse("blog:tag", args=["python"]),
        "topic": content.topic.get_absolute_url(), "repository": content.repository.get_absolute_url(),
    }[name]


def admin_change(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.mark.parametrize("who", ["publishing", "chief"])
def test_a_publisher_sees_edit_status_purge_check_and_admin_on_a_post(request, content, who):
    """As a superuser does: a Publisher holds every right the bar offers."""
    response = request.getfixturevalue(who).get(content.post.get_absolute_url())
    bar = bar_of(response)
    assert links(bar) == {"Edit post": admin_change(content.post), "Admin": reverse("admin:index")}
    assert "Status: <strong>Published</strong>" in bar
    assert f'action="{reverse("editbar:purge", args=["post", content.post.pk])}"' in bar
    assert 'name="csrfmiddlewaretoken"' in bar and f'name="next" value="{content.post.get_absolute_url()}"' in bar
    assert 'data-axe-src="/static/vendor/axe-core/axe.min.js"' in bar
    assert "Preview latest draft" not in bar  # a published item has no newer unpublished revision
    page = response.content.decode()
    assert '<script src="/static/editbar/editbar.js" defer></script>' in page
    assert '<link rel="stylesheet" href="/static/editbar/editbar.css">' in page


def object_named(content, name: str):
    from taggit.models import Tag

    return {"digest": content.digest, "author": content.author, "tag": Tag.objects.get(name="python"),
            "topic": content.topic, "repository": content.repository}[name]


@pytest.mark.parametrize("name", ["digest", "author", "tag", "topic", "repository"])
def test_every_page_about_one_object_links_to_its_change_page(publishing, content, name):
    obj = object_named(content, name)
    bar = bar_of(publishing.get(page_of(content, name)))
    assert links(bar)[f"Edit {name}"] == admin_change(obj)
    assert f'action="{reverse("editbar:purge", args=[name, obj.pk])}"' in bar
    assert ("Status: <strong>Published</strong>" in bar) == (name == "digest")


@pytest.mark.parametrize("name, link", [("digest", "View digest in the admin"), ("author", "Edit author"),
                                        ("tag", "View tag in the admin"), ("topic", "View topic in the admin"),
                                        ("repository", "View repository in the admin")])
def test_an_editor_edits_or_views_what_the_role_allows_and_purges_nothing(editing, content, name, link):
    """Editors change authors and drafts; published digests, tags, topics and repositories they only view."""
    bar = bar_of(editing.get(page_of(content, name)))
    assert links(bar)[link] == admin_change(object_named(content, name))
    assert "<form" not in bar and "Purge from the edge" not in bar


@pytest.mark.parametrize("url", ["/", "/posts/", "/wire/", "/topics/", "/tags/", "/search/?q=post"])
def test_a_listing_has_the_bar_without_an_object(staff, content, url):
    bar = bar_of(staff.get(url))
    assert links(bar) == {"Admin": reverse("admin:index")}
    assert "Check accessibility" in bar and "Status:" not in bar and "<form" not in bar


def test_an_editor_may_only_view_a_published_post_and_may_not_purge(editing, content):
    bar = bar_of(editing.get(content.post.get_absolute_url()))
    assert links(bar) == {"View post in the admin": admin_change(content.post), "Admin": reverse("admin:index")}
    assert "Purge from the edge" not in bar


def test_an_editor_edits_an_author(editing, content):
    """Editors hold change_author: the admin's own permission, not the workflow, decides."""
    assert links(bar_of(editing.get(content.author.get_absolute_url())))["Edit author"] == admin_change(content.author)


def test_a_publisher_edits_and_purges_a_published_digest(publishing, content):
    bar = bar_of(publishing.get(content.digest.get_absolute_url()))
    assert links(bar)["Edit digest"] == admin_change(content.digest)
    assert "Purge from the edge" in bar


def test_staff_without_permissions_get_nothing_about_the_object(bare_staff, content):
    for url in (content.post.get_absolute_url(), content.draft.get_absolute_url()):
        bar = bar_of(bare_staff.get(url))
        assert links(bar) == {"Admin": reverse("admin:index")}, url
        assert "Status:" not in bar and "Purge from the edge" not in bar and "Check accessibility" in bar


def test_an_unpublished_post_offers_its_latest_draft_on_its_404(staff, client, content):
    url = content.draft.get_absolute_url()
    response = staff.get(url)
    assert response.status_code == 404
    bar = bar_of(response)
    assert links(bar)["Preview latest draft"] == reverse("blog:preview", args=[content.draft.pk])
    assert links(bar)["Edit post"] == admin_change(content.draft)
    assert "Status: <strong>Draft</strong>" in bar and "Purge from the edge" not in bar
    assert bar_of(client.get(url)) == "" and "Preview" not in client.get(url).content.decode()


def test_a_scheduled_digest_says_when(staff, content):
    bar = bar_of(staff.get(content.scheduled.get_absolute_url()))
    when = content.scheduled.published_at
    assert f"Status: <strong>Scheduled for {when:%B} {when.day}, {when:%Y, %H:%M} UTC</strong>" in bar
    assert links(bar)["Preview latest draft"] == reverse("digests:preview", args=[content.scheduled.pk])


def test_a_preview_shows_the_status_and_no_link_to_itself(staff, content):
    bar = bar_of(staff.get(reverse("blog:preview", args=[content.draft.pk])))
    assert "Status: <strong>Draft</strong>" in bar and "Preview latest draft" not in bar
    assert links(bar)["Edit post"] == admin_change(content.draft)


@pytest.mark.parametrize("who", ["anonymous", "member"])
def test_readers_never_see_it_where_staff_do(client, member, editing, content, who):
    """Neither anonymous readers nor a signed-in member who is not staff (their session is no licence)."""
    reader = {"anonymous": client, "member": member}[who]
    for url in (content.post.get_absolute_url(), "/", content.draft.get_absolute_url()):
        assert bar_of(editing.get(url)), url
        assert "editbar" not in reader.get(url).content.decode(), url


def test_a_purge_message_shows_in_the_bar_on_the_page_it_returns_to(publishing, content, monkeypatch):
    from edge import outbox

    monkeypatch.setattr(outbox, "queue", lambda pk: None)
    url = content.post.get_absolute_url()
    response = publishing.post(reverse("editbar:purge", args=["post", content.post.pk]), {"next": url}, follow=True)
    assert response.redirect_chain == [(url, 302)]
    assert f"post-{content.post.pk}" in bar_of(response).split('class="editbar-messages"')[1]
