"""Each staff user chooses their own time zone in the admin; nobody else's."""
import pytest
from django.urls import reverse

from accounts.models import Profile

pytestmark = pytest.mark.django_db


def test_a_user_without_preferences_gets_the_sites_time_zone(editor, settings):
    settings.TIME_ZONE = "Europe/Paris"
    assert Profile.objects.time_zone_of(editor) == "Europe/Paris"
    assert not Profile.objects.exists()  # reading writes nothing


def test_an_editor_sets_their_time_zone_in_the_admin(client, editor):
    client.force_login(editor)
    response = client.get(reverse("admin:accounts_profile_changelist"))
    profile = Profile.objects.get(user=editor)
    change = reverse("admin:accounts_profile_change", args=[profile.pk])
    assert response["Location"] == change
    assert client.get(change).status_code == 200
    assert client.post(change, {"time_zone": "America/New_York"}).status_code == 302
    assert Profile.objects.time_zone_of(editor) == "America/New_York"
    refused = client.post(change, {"time_zone": "Mars/Olympus_Mons"})
    assert refused.status_code == 200 and refused.context["adminform"].form.errors["time_zone"]


def test_nobody_but_the_owner_or_a_superuser_sees_someones_preferences(client, editor, publisher):
    theirs = Profile.objects.create(user=publisher, time_zone="Asia/Tokyo")
    client.force_login(editor)
    assert client.get(reverse("admin:accounts_profile_change", args=[theirs.pk])).status_code == 302  # "not found"
    assert client.post(reverse("admin:accounts_profile_change", args=[theirs.pk]),
                       {"time_zone": "UTC"}).status_code in (302, 403)
    theirs.refresh_from_db()
    assert theirs.time_zone == "Asia/Tokyo"
