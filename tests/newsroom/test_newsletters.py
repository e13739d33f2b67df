"""The newsroom's Newsletters block: messages still going out and recent failures, with their progress."""
import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from .conftest import newsletter
from .test_page import get_page, section

pytestmark = pytest.mark.django_db


def test_sends_in_progress_and_recent_failures_are_shown_with_their_counts(client, publisher):
    going = newsletter({"queued": 3, "sending": 1, "sent": 4}, subject="Going out")
    failed = newsletter({"sent": 5, "failed": 2, "bounced": 1}, days_ago=2, subject="Some failed")
    newsletter({"sent": 3}, subject="All sent")
    newsletter({"sent": 1, "failed": 1}, days_ago=8, subject="Failed long ago")
    newsletter({"queued": 1}, subject="A test", is_test=True)
    block = section(get_page(client, publisher), "Newsletters")
    assert "Going out" in block and "Some failed" in block
    assert "All sent" not in block and "Failed long ago" not in block and "A test" not in block
    assert block.index("Going out") < block.index("Some failed")  # newest first
    for message, counts in ((going, [3, 1, 4, 0, 0]), (failed, [0, 0, 5, 2, 1])):
        url = reverse("admin:newsletters_message_change", args=[message.pk])
        row = block[block.index(url):].split("</tr>", 1)[0]
        assert [int(cell.split("</td>")[0]) for cell in row.split("<td>")[1:]] == counts  # queued … bounced


def test_nothing_to_report_says_so(client, editor):
    newsletter({"sent": 2})
    assert "No newsletter is being sent" in section(get_page(client, editor), "Newsletters")


def test_only_users_who_may_view_messages_see_the_block(client, django_user_model):
    newsletter({"queued": 1}, subject="Going out")
    staff = django_user_model.objects.create_user("intern", password="pw", is_staff=True)  # no permission
    assert section(get_page(client, staff), "Newsletters") == ""
    staff.user_permissions.add(Permission.objects.get(codename="view_message", content_type__app_label="newsletters"))
    assert "Going out" in section(get_page(client, staff), "Newsletters")


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_editors_and_publishers_follow_what_is_going_out(client, request, role):
    """Both roles hold ``view_message`` (newsletters/migrations/0006_editorial_permissions.py)."""
    newsletter({"queued": 1}, subject="Going out")
    assert "Going out" in section(get_page(client, request.getfixturevalue(role)), "Newsletters")
