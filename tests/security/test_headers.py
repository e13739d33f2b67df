"""Browser-side hardening: CSP and Permissions-Policy on every HTML response, and
`check --deploy` with no warning in the documented production environment (issue 17, item 4)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
#: The production environment docs/operations.md documents (TLS terminated by the proxy in front).
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
    "DJANGO_SECRET_KEY": "q8Vb2!LmZ4xR7tN1wK9pS3dF6gH0jC5y-eU_aOq7Tz3Wk1Xv8Nb5Lm2Rp9Hs4Jd6",  # 50+ (W009)
    "DJANGO_ALLOWED_HOSTS": "repojournal.example.org",
    "SITE_URL": "https://repojournal.example.org",
}
OWN_VARIABLES = ("DJANGO_", "DATABASE_URL", "REDIS_URL", "SITE_URL", "EGRESS_", "AXES_")


def manage(*args, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(OWN_VARIABLES)}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          env={**environment, **PRODUCTION_ENV, **env}, timeout=120)


def test_check_deploy_has_no_warnings_in_the_documented_production_environment():
    result = manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


def test_turning_the_redirect_off_is_a_choice_not_a_warning():
    """TLS and its redirect handled elsewhere: DJANGO_SECURE_SSL_REDIRECT=0 (docs/operations.md)."""
    result = manage("check", "--deploy", "--fail-level", "WARNING", DJANGO_SECURE_SSL_REDIRECT="0")
    assert result.returncode == 0 and "no issues (1 silenced)" in result.stdout, result.stdout + result.stderr


def test_the_check_does_warn_when_production_is_weakened():
    """Or the test above proves nothing: plain-HTTP cookies are reported."""
    result = manage("check", "--deploy", "--fail-level", "WARNING", DJANGO_SECURE_COOKIES="0")
    assert result.returncode != 0 and "security.W012" in result.stderr + result.stdout


SHOW = "from django.conf import settings as s; import json; print(json.dumps([s.SECURE_SSL_REDIRECT, " \
       "s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, s.SESSION_COOKIE_SECURE, " \
       "s.CSRF_COOKIE_SECURE, list(s.SECURE_PROXY_SSL_HEADER)]))"


@pytest.mark.parametrize(("env", "expected"), [
    ({}, [True, 31536000, True, True, True, True, ["HTTP_X_FORWARDED_PROTO", "https"]]),
    ({"DJANGO_SECURE_COOKIES": "0"}, [False, 0, True, True, False, False, ["HTTP_X_FORWARDED_PROTO", "https"]]),
    ({"DJANGO_SECURE_HSTS_SECONDS": "600", "DJANGO_SECURE_HSTS_PRELOAD": "0"},
     [True, 600, True, False, True, True, ["HTTP_X_FORWARDED_PROTO", "https"]]),
])
def test_https_settings_come_from_the_environment(env, expected):
    result = manage("shell", "-c", SHOW, **env)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected, result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/posts/", "/wire/", "/admin/login/", "/no-such-page/", "/search/?q=x"])
def test_every_html_response_carries_a_strict_policy(client, path):
    response = client.get(path)
    assert response["Content-Type"].startswith("text/html")
    policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'self'"
    assert policy["script-src"].split() == ["'self'"]  # no nonce used, no 'unsafe-inline', no hosts
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["form-action"] == "'self'"
    assert "unsafe" not in response["Content-Security-Policy"]
    permissions = response["Permissions-Policy"]
    for feature in ("camera=()", "microphone=()", "geolocation=()", "payment=()", "usb=()"):
        assert feature in permissions


@pytest.mark.django_db
def test_a_template_that_asks_for_a_nonce_gets_it_in_the_header(rf):
    from csp.middleware import CSPMiddleware
    from django.http import HttpResponse
    from django.template import engines

    def view(request):
        html = engines["django"].from_string('<script nonce="{{ request.csp_nonce }}">1</script>')
        return HttpResponse(html.render({}, request))

    request = rf.get("/")
    response = CSPMiddleware(view)(request)
    nonce = response.content.decode().split('nonce="')[1].split('"')[0]
    assert f"'nonce-{nonce}'" in response["Content-Security-Policy"]
