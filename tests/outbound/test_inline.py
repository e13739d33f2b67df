"""`make run`'s mode, in a fresh process: tasks run inline, and a post published through the API reaches the receiver.

Celery sends a task queued by name to the broker -- in inline mode an in-memory one
nobody reads -- when the process never imported the task's module (issue 25: the
delivery stayed pending with 0 attempts for good). So the publish runs in a new
interpreter with the development settings and no REDIS_URL, exactly as `make run`
and `manage.py shell` have it, against a database of its own.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]

PUBLISH_THROUGH_THE_API = """
import django, json, sys
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from django.test import Client
from accounts.models import ApiToken
from outbound.models import Delivery, Endpoint

assert "outbound.tasks" not in sys.modules, "the point: nothing imported the task module yet"
endpoint = Endpoint.objects.create(url=sys.argv[1])
user = get_user_model().objects.create_superuser("publisher", password="pw")
raw = ApiToken.issue(user, "inline", [scope.value for scope in ApiToken.Scope])[1]
client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", SERVER_NAME="127.0.0.1")
author = client.post("/api/v1/authors/", {"slug": "ada", "name": "Ada"}, content_type="application/json").json()
created = client.post("/api/v1/posts/", {"title": "Sent inline", "slug": "sent-inline", "body": "Hello.",
                                         "authors": [{"slug": author["slug"]}]}, content_type="application/json")
assert created.status_code == 201, created.content
published = client.post("/api/v1/posts/sent-inline/status", {"status": "published"}, content_type="application/json")
assert published.status_code == 200, published.content
print(json.dumps(list(Delivery.objects.values("state", "attempt_count"))))
"""


@pytest.fixture
def receiver(httpserver):
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok", status=204)
    return httpserver


def test_a_post_published_through_the_api_in_a_fresh_inline_process_reaches_the_receiver(receiver, tmp_path):
    env = {name: value for name, value in os.environ.items() if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DJANGO_SETTINGS_MODULE="repojournal.settings.dev", DATABASE_URL=f"sqlite:///{tmp_path / 'run.sqlite3'}",
               EGRESS_ALLOWED_NETWORKS="127.0.0.0/8")
    result = subprocess.run([sys.executable, "-c", PUBLISH_THROUGH_THE_API, receiver.url_for("/hook")],
                            cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [{"state": "succeeded", "attempt_count": 1}]
    [(request, _)] = receiver.log
    assert json.loads(request.get_data())["type"] == "post.published"
    assert json.loads(request.get_data())["data"]["title"] == "Sent inline"
