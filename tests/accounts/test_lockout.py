"""Admin sign-in lockouts (django-axes) and the API's per-address limit on unknown tokens (issue 17, item 3)."""
import pytest
from axes.helpers import get_client_ip_address
from axes.models import AccessAttempt, AccessFailureLog
from django.core.management import call_command
from django.test import RequestFactory, override_settings

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/?next=/admin/"
PASSWORD = "correct horse battery staple"


@pytest.fixture
def boss(django_user_model):
    return django_user_model.objects.create_superuser("boss", "boss@example.org", PASSWORD)


def sign_in(client, username, password, address="198.51.100.7"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return client.get("/admin/").status_code == 200


def test_eleven_wrong_passwords_lock_the_account_until_unlocked(client, boss):
    for attempt in range(9):
        response = sign_in(client, "boss", f"wrong-{attempt}")
        assert response.status_code == 200 and "correct username and password" in response.content.decode()
    assert sign_in(client, "boss", "wrong-9").status_code == 429  # the 10th failure locks
    locked = sign_in(client, "boss", "wrong-10")  # the 11th is refused
    assert locked.status_code == 429 and locked["Retry-After"] == "3600"
    page = locked.content.decode()
    assert "Sign-in locked" in page and "Try again after" in page and "UTC" in page
    assert "60 minutes" in page

    refused = sign_in(client, "boss", PASSWORD)  # the right password, still refused
    assert refused.status_code == 429 and not signed_in(client)
    refused_elsewhere = sign_in(client, "boss", PASSWORD, address="203.0.113.50")  # per user: any address
    assert refused_elsewhere.status_code == 429 and not signed_in(client)

    assert AccessFailureLog.objects.filter(username="boss").count() >= 11  # every failure recorded
    call_command("axes_reset_username", "boss")
    assert sign_in(client, "boss", PASSWORD).status_code == 302 and signed_in(client)


def test_one_address_is_locked_across_usernames(client, boss):
    for attempt in range(10):
        sign_in(client, f"guess-{attempt}", "nope", address="192.0.2.66")
    assert sign_in(client, "boss", PASSWORD, address="192.0.2.66").status_code == 429
    assert not signed_in(client)
    assert sign_in(client, "boss", PASSWORD, address="192.0.2.67").status_code == 302  # another address is fine


def test_superusers_see_attempts_in_the_admin_and_unlock_with_an_action(client, admin_client, boss):
    for attempt in range(11):
        sign_in(client, "boss", f"wrong-{attempt}")
    assert sign_in(client, "boss", PASSWORD).status_code == 429
    listing = admin_client.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "boss" in listing.content.decode()
    assert admin_client.get("/admin/axes/accessfailurelog/").status_code == 200
    attempts = list(AccessAttempt.objects.values_list("pk", flat=True))
    response = admin_client.post("/admin/axes/accessattempt/", {
        "action": "unlock", "_selected_action": attempts}, follow=True)
    assert "Unlocked 1 username/address pair(s)" in response.content.decode()
    assert not AccessAttempt.objects.exists()
    assert sign_in(client, "boss", PASSWORD).status_code == 302 and signed_in(client)


def test_editors_cannot_see_the_sign_in_records(client, editor):
    client.force_login(editor)
    assert client.get("/admin/axes/accessattempt/").status_code == 403


def test_without_a_proxy_setting_forwarded_headers_are_not_believed():
    request = RequestFactory().post(LOGIN, REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR="6.6.6.6",
                                    HTTP_X_REAL_IP="7.7.7.7")
    assert get_client_ip_address(request) == "198.51.100.1"


@override_settings(AXES_IPWARE_META_PRECEDENCE_ORDER=["HTTP_X_REAL_IP", "REMOTE_ADDR"])
def test_behind_the_proxy_the_address_is_the_header_the_proxy_sets():
    """The documented proxy setting: the edge overwrites X-Real-IP; the client's X-Forwarded-For is ignored."""
    request = RequestFactory().post(LOGIN, REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6",
                                    HTTP_X_REAL_IP="203.0.113.9")
    assert get_client_ip_address(request) == "203.0.113.9"


@override_settings(API_THROTTLE_RATES={"list_ip": "1000/m", "list_token": "1000/m", "token_failure_ip": "5/m"})
def test_unknown_tokens_are_limited_per_address_with_429_and_retry_after(client, editor):
    _row, good = ApiToken.issue(editor, "good", [ApiToken.Scope.READ_DRAFTS])
    answers = [client.get("/api/v1/digests/", HTTP_AUTHORIZATION=f"Bearer wrong-{n}", REMOTE_ADDR="192.0.2.9")
               for n in range(6)]
    assert [a.status_code for a in answers] == [401] * 5 + [429]
    assert 1 <= int(answers[-1]["Retry-After"]) <= 61 and answers[-1].json()["detail"]
    # Now even a right token from that address waits: guessing gets no answer either way.
    assert client.get("/api/v1/digests/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR="192.0.2.9").status_code == 429
    assert client.get("/api/v1/digests/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR="192.0.2.10").status_code == 200
