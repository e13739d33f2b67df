"""The newsroom as each role sees it: what each section shows, to whom, and where its links lead."""
import datetime
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import Profile
from blog.factories import PostFactory
from digests.factories import DigestFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from ingestion.models import DigestDraft
from publishing.workflow import Status

from .conftest import draft, drafted_digest, failures, in_review, scheduled

pytestmark = pytest.mark.django_db

NEWSROOM = "/admin/"


def section(page: str, heading: str) -> str:
    """The HTML of the section under `heading` ("" if the page has none)."""
    found = re.search(rf'<h2 id="newsroom-\w+">{heading}</h2>(.*?)</section>', page, re.DOTALL)
    return found.group(1) if found else ""


def get_page(client, user) -> str:
    client.force_login(user)
    response = client.get(NEWSROOM)
    assert response.status_code == 200
    assert response.templates[0].name == "newsroom/index.html"
    return response.content.decode()


def test_anonymous_visitors_are_sent_to_sign_in_and_back_to_the_newsroom(client, editor):
    response = client.get(NEWSROOM)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={NEWSROOM}"
    assert client.get("/admin/models/")["Location"].startswith(reverse("admin:login"))
    client.force_login(editor)
    assert client.get(NEWSROOM).templates[0].name == "newsroom/index.html"


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_the_model_list_is_one_click_away_and_every_admin_url_still_works(client, request, role):
    page = get_page(client, request.getfixturevalue(role))
    assert f'href="{reverse("admin:model_list")}"' in page
    response = client.get(reverse("admin:model_list"))
    assert response.status_code == 200 and response.context["title"] == "All models"
    listed = {model["object_name"] for app in response.context["app_list"] for model in app["models"]}
    assert {"Digest", "Post", "Topic", "Image"} <= listed  # both roles upload images
    for name, args in [("admin:app_list", ["digests"]), ("admin:digests_digest_changelist", []),
                       ("admin:blog_post_add", []), ("admin:images_image_upload", []),
                       ("admin:password_change", [])]:
        assert client.get(reverse(name, args=args)).status_code == 200, name
    assert "RepoJournal editorial" in page and "<title>Newsroom | RepoJournal</title>" in page


def test_publishers_see_the_review_queue_oldest_first_with_who_and_how_long(client, publisher, make_staff_user):
    ada = make_staff_user("ada", "Editors")
    ada.first_name, ada.last_name = "Ada", "Lovelace"
    ada.save()
    fresh = in_review("post", ada, hours_ago=47, title="Fresh post")
    stale = in_review("digest", ada, hours_ago=49, headline="Stale digest")
    draft("post", title="Not in review")
    text = section(get_page(client, publisher), "Waiting for review")
    assert text.index("Stale digest") < text.index("Fresh post")
    assert "Not in review" not in text
    assert text.count("Ada Lovelace") == 2
    rows = re.findall(r"<tr( class=\"newsroom-overdue\")?>\s*<th scope=\"row\"><a href=\"([^\"]+)\">", text)
    assert rows == [(' class="newsroom-overdue"', reverse("admin:digests_digest_change", args=[stale.pk])),
                    ("", reverse("admin:blog_post_change", args=[fresh.pk]))]
    assert text.count("over 48 h") == 1
    assert "2\xa0days" in text and "23\xa0hours" in text  # 47 h: "1 day, 23 hours"


def test_an_unrecorded_submission_waits_at_least_since_the_last_change(client, publisher):
    item = PostFactory(status=Status.IN_REVIEW, published_at=None, title="Old queue item")
    type(item).objects.filter(pk=item.pk).update(updated_at=timezone.now() - datetime.timedelta(days=3))
    text = section(get_page(client, publisher), "Waiting for review")
    assert "not recorded" in text and "at least" in text and "over 48 h" in text


def test_editors_see_no_review_queue_and_no_failures_they_cannot_act_on(client, editor, make_staff_user):
    in_review("post", make_staff_user("ada", "Editors"), hours_ago=1, title="Queued")
    failures(2)
    page = get_page(client, editor)
    assert section(page, "Waiting for review") == "" and "Queued" not in page
    assert_only_the_drafts_row(client, section(page, "Needs attention"))
    assert "webhook" not in page
    assert section(page, "Going out next") and section(page, "Yours") and section(page, "Drafted digests")


def assert_only_the_drafts_row(client, attention: str):
    """Of the failures, an Editor's or a Publisher's remedy is only the model's failed drafts (issue 36):
    redrafting them; the row's link opens the drafts the model failed to write."""
    links = re.findall(r'<a href="([^"]+)"><strong>(\d+)</strong> ([^<]+)</a>', attention)
    assert [(int(count), label) for _, count, label in links] == [(2, "drafts the model failed to write")]
    response = client.get(links[0][0].replace("&amp;", "&"))
    assert response.status_code == 200 and response.context["cl"].result_count == 2


def test_publishers_see_no_failures_either_their_remedies_are_the_operators(client, publisher):
    """Webhook deliveries, feeds, outbound endpoints and edge purges are the operators' (docs/operations.md, "Roles")."""
    failures(2)
    page = get_page(client, publisher)
    assert_only_the_drafts_row(client, section(page, "Needs attention"))
    assert "webhook" not in page
    assert section(page, "Waiting for review")


def test_going_out_next_lists_the_next_seven_days_in_the_editors_time_zone(client, editor):
    soon = timezone.now().replace(microsecond=0) + datetime.timedelta(hours=5)
    scheduled("post", hours_ahead=5, title="Soon post").__class__.objects.filter(title="Soon post").update(
        published_at=soon)
    scheduled("digest", hours_ahead=24 * 6, headline="Next week digest")
    scheduled("post", hours_ahead=24 * 8, title="Too far post")
    PostFactory(title="Already out")
    text = section(get_page(client, editor), "Going out next")
    assert text.index("Soon post") < text.index("Next week digest")
    assert "Too far post" not in text and "Already out" not in text
    assert f'<time datetime="{soon.isoformat()}">' in text and " UTC</time>" in text
    Profile.objects.create(user=editor, time_zone="Asia/Tokyo")
    page = get_page(client, editor)
    tokyo = soon.astimezone(datetime.timezone(datetime.timedelta(hours=9)))
    assert "Times are in <strong>Asia/Tokyo</strong>" in page
    assert f'<time datetime="{tokyo.isoformat()}">{tokyo:%a} {tokyo.day} {tokyo:%b, %H:%M} JST</time>' in page


def test_a_section_of_posts_and_digests_is_the_first_rows_of_both_merged_in_order():
    """Each part of the UNION is ordered and cut where the database allows it; the merge must still be exact."""
    from newsroom import sections

    last = 3 * sections.ROWS  # more of each kind than a part may hold, created latest first
    for hour in range(last - 1, 0, -2):
        scheduled("post", hours_ahead=hour, title=f"Post at {hour}")
        scheduled("digest", hours_ahead=hour + 1, headline=f"Digest at {hour + 1}")
    found = sections.going_out_next(list(sections.MODELS.values()), timezone.now())
    hours = [int(item.label.rsplit(" ", 1)[1]) for item in found.items]
    assert hours == list(range(1, sections.ROWS + 1)) and found.more
    assert [item.kind for item in found.items] == ["post", "digest"] * (sections.ROWS // 2)


def test_yours_lists_your_drafts_newest_edit_first_and_says_who_returned_one(client, editor, publisher):
    mine = draft("post", title="My own draft", created_by=editor)
    edited = draft("digest", headline="Draft I edited", created_by=publisher, edited_by=editor)
    returned = draft("post", title="Sent back", created_by=editor, edited_by=editor,
                     status_changed_at=timezone.now(), status_changed_by=publisher)
    draft("post", title="Someone else's", created_by=publisher)
    PostFactory(status=Status.IN_REVIEW, published_at=None, title="Mine in review", created_by=editor)
    type(mine).objects.filter(pk=mine.pk).update(updated_at=timezone.now() - datetime.timedelta(hours=2))
    text = section(get_page(client, editor), "Yours")
    assert text.index("Sent back") < text.index("Draft I edited") < text.index("My own draft")
    assert "Someone else" not in text and "Mine in review" not in text
    assert text.count("by publisher") == 1 and 'class="newsroom-returned"' in text
    assert reverse("admin:blog_post_change", args=[returned.pk]) in text
    assert reverse("admin:digests_digest_change", args=[edited.pk]) in text


def test_drafted_digests_count_the_references_that_arrived_since_and_leave_once_opened(client, editor):
    topic, other = TopicFactory(), TopicFactory()
    repositories = [RepositoryFactory(topic=topic), RepositoryFactory(topic=topic)]
    ReferenceFactory(repository=repositories[0])  # before the draft
    record = drafted_digest(topic, generated_hours_ago=0)
    ReferenceFactory(repository=repositories[0])
    ReferenceFactory(repository=repositories[1])
    ReferenceFactory(repository=RepositoryFactory(topic=other))  # another topic's
    text = section(get_page(client, editor), "Drafted digests")
    change = reverse("admin:digests_digest_change", args=[record.digest_id])
    assert re.search(rf'href="{change}">{record.digest.headline}</a>.*?<td>2</td>', text, re.DOTALL)
    assert client.get(change).status_code == 200  # the editor opens it
    record.refresh_from_db()
    assert record.opened_by == editor and record.opened_at is not None
    assert change not in section(get_page(client, editor), "Drafted digests")


def test_a_reader_without_the_right_to_edit_does_not_open_a_draft(client, django_user_model):
    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(*__import__("django.contrib.auth.models", fromlist=["Permission"]).Permission
                                .objects.filter(codename="view_digest"))
    record = drafted_digest(TopicFactory())
    client.force_login(viewer)
    assert client.get(reverse("admin:digests_digest_change", args=[record.digest_id])).status_code == 200
    record.refresh_from_db()
    assert record.opened_at is None


def test_needs_attention_counts_link_to_the_lists_filtered_to_them(client, superuser):
    failures(2)
    page = get_page(client, superuser)
    links = re.findall(r'<a href="([^"]+)"><strong>(\d+)</strong> ([^<]+)</a>', section(page, "Needs attention"))
    assert [(int(count), label) for _, count, label in links] == [
        (2, "failed webhook deliveries"), (2, "feeds failing"), (2, "outbound endpoints failing"),
        (2, "outbound endpoints disabled"), (2, "edge purges still being retried"),
        (2, "drafts the model failed to write")]
    for url, count, label in links:
        response = client.get(url.replace("&amp;", "&"))
        assert response.status_code == 200, label
        assert response.context["cl"].result_count == int(count), label
        cl = response.context["cl"]
        # Large lists do not count the whole table (show_full_result_count = False, issue 26): count it here.
        full = cl.full_result_count if cl.full_result_count is not None else cl.root_queryset.count()
        assert full > int(count), label  # the filter really filtered


@pytest.mark.parametrize("role", ["editor", "publisher", "superuser"])
def test_every_row_links_to_its_change_page(client, roles, role):
    """A Publisher's review queue and an Editor's own drafts alike: each row opens the item it names."""
    user = roles[role]
    item = draft("digest", created_by=user) if role == "editor" else in_review("digest", user, hours_ago=1)
    page = get_page(client, user)
    change = reverse("admin:digests_digest_change", args=[item.pk])
    assert f'href="{change}"' in page
    assert client.get(change).context["original"] == item


def test_see_all_links_open_the_filtered_changelists(client, publisher):
    in_review("post", publisher, hours_ago=1)
    PostFactory(title="Published")
    page = get_page(client, publisher)
    for url in re.findall(r'<a href="(/admin/[a-z]+/[a-z]+/\?[^"]+)">', page):
        response = client.get(url.replace("&amp;", "&"))
        assert response.status_code == 200, url
        assert "Published" not in {str(obj) for obj in response.context["cl"].result_list}, url
