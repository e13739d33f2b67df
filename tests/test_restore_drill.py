"""The restore drill (issue 28): a site backed up with `make backup` comes back whole with `make restore`.

It builds a site with published and scheduled content, an image with its renditions, an API
token and an outbound endpoint; backs it up with ``deploy/backup.py`` (what `make backup` runs)
in a process of its own; deletes the files; restores into a database that did not exist; and
points this process at it. The restored site must serve the same public pages byte for byte,
accept the old API token and GitHub's signatures, sign its outbound messages with the secret the
receiver already has, and still publish what was scheduled when its time comes.
"""
import datetime
import hashlib
import hmac
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook
from werkzeug.wrappers import Response

from accounts.models import ApiToken
from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from ingestion.models import WebhookDelivery
from outbound import delivery, outbox
from outbound.models import Endpoint
from publishing.workflow import Status
from reader.caching import LOCAL
from tests.fixtures import WEBHOOK_PAYLOADS
from tests.images.conftest import picture_bytes, store_images_in, upload_form

PROJECT = Path(__file__).resolve().parent.parent
GITHUB_SECRET = "kept with the other secrets"
#: The scheduled post's time, from its creation: not past the first reads (the reads after the restore are made
#: at the first reads' time, as the backup and restore take longer than this on a loaded machine).
SCHEDULED_IN = datetime.timedelta(seconds=15)

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the drill backs up and restores PostgreSQL with pg_dump/pg_restore (CI's PostgreSQL pass runs it; "
           "deploy/backup.py's SQLite path is tested in both passes)")


def database_url(name: str) -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


def run_backup_script(*args: str, database: str, env: dict) -> subprocess.CompletedProcess:
    """deploy/backup.py in a process of its own, as `make backup` / `make restore` run it."""
    return subprocess.run([sys.executable, str(PROJECT / "deploy" / "backup.py"), *args], capture_output=True,
                          text=True, cwd=PROJECT, env={**os.environ, **env, "DATABASE_URL": database_url(database)})


def drop(name: str) -> None:
    with psycopg.connect(database_url("postgres"), autocommit=True) as maintenance:
        maintenance.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def files(settings, tmp_path):
    """The image storages on disk, in this test's folder, as the backup's environment names them."""
    return store_images_in(settings, tmp_path / "media", tmp_path / "originals")


@pytest.fixture
def restored_database():
    """A database name no one uses yet; dropped afterwards, this process pointed back at its own."""
    name = f"{connection.settings_dict['NAME']}_restored"
    drop(name)
    original = connection.settings_dict["NAME"]
    yield name
    connections.close_all()
    connection.settings_dict["NAME"] = original
    drop(name)


def use_database(name: str) -> None:
    connections.close_all()
    connection.settings_dict["NAME"] = name


def public_pages(urls: list[str]) -> dict[str, tuple[int, bytes]]:
    """What an anonymous reader gets at each URL, from the database (every cache emptied first)."""
    cache.clear()
    LOCAL.reset()
    client = Client()
    return {url: (response.status_code, b"".join(response) if response.streaming else response.content)
            for url in urls for response in [client.get(url)]}


def build_site(monkeypatch, receiver_url: str) -> dict:
    from images import renditions, uploads

    # The content-type cache is the process's: an earlier test that created a content type inside its
    # rolled-back transaction leaves an id no table holds, which only a test that commits (this one) trips on.
    ContentType.objects.clear_cache()
    monkeypatch.setattr(uploads, "queue_renditions_on_commit", lambda image_id: None)  # made below instead
    endpoint = Endpoint.objects.create(url=receiver_url, description="a subscriber's receiver")
    form = upload_form({"chart.png": picture_bytes()}, ["A chart of merges"])
    assert form.is_valid(), form.errors
    [image] = form.save(user=None)
    renditions.make(image)
    author = AuthorFactory(name="Ada Lovelace", slug="ada")
    post = PostFactory(title="Restored whole", slug="restored-whole", authors=[author], tags=["operations"],
                       body=f"Before the chart.\n\n![A chart of merges](image:{image.pk})\n\nAfter it.")
    scheduled = PostFactory(title="Goes out later", slug="goes-out-later", authors=[author],
                            published_at=timezone.now() + SCHEDULED_IN)
    digest = DigestFactory(status=Status.PUBLISHED)
    draft = PostFactory(title="A draft", slug="a-draft", status=Status.DRAFT, published_at=None)
    token = ApiToken.issue(draft_reader(), "drill", ["read:drafts"])[1]
    image.refresh_from_db()
    return {"post": Post.objects.get(pk=post.pk), "scheduled": scheduled, "digest": digest, "draft": draft,
            "endpoint_secret": endpoint.whsec, "endpoint_id": endpoint.pk, "token": token, "image": image}


def draft_reader():
    from django.contrib.auth import get_user_model

    from tests.conftest import editorial_group

    user = get_user_model().objects.create_user(username="drill-editor", password="pw", is_staff=True)
    user.groups.add(editorial_group("Editors"))
    return user


def page_urls(site: dict, client: Client) -> list[str]:
    post_page = client.get(site["post"].get_absolute_url()).content.decode()
    rendition = next(part.split(" ")[0] for part in post_page.split('srcset="')[1:] if "/media/" in part)
    card = site["post"].social_card_url
    listings = [reverse(name) for name in ("home", "blog:index", "digests:index", "sitemap")]
    listings += [reverse("blog:feed", args=["atom"]), reverse("digests:feed", args=["atom"])]
    return [*listings, reverse("blog:tag", args=["operations"]), reverse("blog:author", args=["ada"]),
            site["post"].get_absolute_url(), site["digest"].get_absolute_url(), card, rendition,
            site["scheduled"].get_absolute_url()]


def signed_github_delivery(client: Client):
    body = (WEBHOOK_PAYLOADS / "ping.payload.json").read_bytes()
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return client.post("/webhooks/github", data=body, content_type="application/json", headers={
        "X-GitHub-Event": "ping", "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature})


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_backed_up_site_restored_into_a_new_database_is_the_same_site(
        files, restored_database, monkeypatch, settings, tmp_path, httpserver):
    settings.GITHUB_WEBHOOK_SECRET = GITHUB_SECRET
    received = []

    def receive(request):
        received.append((request.get_data(), dict(request.headers)))
        return Response("", status=204)

    httpserver.expect_request("/hook", method="POST").respond_with_handler(receive)
    site = build_site(monkeypatch, httpserver.url_for("/hook"))
    urls = page_urls(site, Client())
    read_at = timezone.now()
    before = public_pages(urls)
    assert before == public_pages(urls), "a page differs between two reads of one database: nothing to compare"
    assert all(status == 200 for status, _ in list(before.values())[:-1]), before.keys()
    assert before[site["scheduled"].get_absolute_url()][0] == 404  # not yet

    env = {"BACKUP_DIR": str(tmp_path / "backups"), "DJANGO_MEDIA_ROOT": str(files["renditions"]),
           "IMAGES_ORIGINALS_ROOT": str(files["originals"]), "TOPOLOGY_DIR": str(tmp_path / "topology")}
    made = run_backup_script("backup", database=connection.settings_dict["NAME"], env=env)
    assert made.returncode == 0, made.stderr
    for root in files.values():  # the worst day: the files are gone
        shutil.rmtree(root)

    restored = run_backup_script("restore", database=restored_database, env=env)
    assert restored.returncode == 0, restored.stderr
    again = run_backup_script("restore", database=restored_database, env=env)
    assert again.returncode == 2 and "already has" in again.stderr  # never over a database by accident

    use_database(restored_database)
    assert Post.objects.filter(pk=site["post"].pk).exists()
    with monkeypatch.context() as clock:  # as at the first reads: the scheduled post's time may have come meanwhile
        clock.setattr(timezone, "now", lambda: read_at)
        after = public_pages(urls)
    assert after == before  # byte for byte, the image and the card included

    client = Client()
    draft = client.get(f"/api/v1/posts/{site['draft'].slug}", HTTP_AUTHORIZATION=f"Bearer {site['token']}")
    assert draft.status_code == 200 and draft.json()["title"] == "A draft"
    assert signed_github_delivery(client).status_code in (200, 202)
    assert WebhookDelivery.objects.count() == 1

    wait = (site["scheduled"].published_at - timezone.now()).total_seconds()
    time.sleep(max(0.0, wait) + 0.5)
    # what writes owed before the backup (no worker ran: the post, the digest) and the scheduled post, at its time
    assert outbox.sweep(now=timezone.now() + datetime.timedelta(minutes=1)) + outbox.announce_due() == 3
    assert public_pages([site["scheduled"].get_absolute_url()])[site["scheduled"].get_absolute_url()][0] == 200
    # what was owed before the backup (no worker ran) and what just went out, signed as receivers expect
    assert delivery.deliver_due(site["endpoint_id"]) == len(received)
    verified = [Webhook(site["endpoint_secret"]).verify(body, headers) for body, headers in received]
    said = [(message["type"], message["data"]["id"]) for message in verified]
    assert {("post.published", site["post"].pk), ("digest.published", site["digest"].pk)} <= set(said)
    assert ("post.published", site["scheduled"].pk) in said  # the scheduled post, once its time came, once
    assert len(said) == len(set(said))


def test_restore_names_what_is_missing():
    result = subprocess.run([sys.executable, str(PROJECT / "deploy" / "backup.py"), "restore"], capture_output=True,
                            text=True, cwd=PROJECT, env={**os.environ, "BACKUP_DIR": "/nonexistent/backups"})
    assert result.returncode == 2 and "No complete backup in /nonexistent/backups" in result.stderr


def test_a_sqlite_database_and_its_files_round_trip(tmp_path):
    """`make run`'s database: copied with SQLite's online backup, restored only where nothing is."""
    source, target = tmp_path / "site.sqlite3", tmp_path / "restored" / "site.sqlite3"
    target.parent.mkdir()
    with sqlite3.connect(source) as db:
        db.execute("CREATE TABLE t (v TEXT)")
        db.execute("INSERT INTO t VALUES ('kept')")
    media = tmp_path / "media"
    (media / "renditions").mkdir(parents=True)
    (media / "renditions" / "a.webp").write_bytes(b"RIFF-not-really")
    env = {"BACKUP_DIR": str(tmp_path / "backups"), "DJANGO_MEDIA_ROOT": str(media),
           "IMAGES_ORIGINALS_ROOT": str(tmp_path / "originals"), "TOPOLOGY_DIR": str(tmp_path / "topology")}

    def script(*args, url):
        return subprocess.run([sys.executable, str(PROJECT / "deploy" / "backup.py"), *args], capture_output=True,
                              text=True, cwd=PROJECT, env={**os.environ, **env, "DATABASE_URL": url})

    made = script("backup", url=f"sqlite:///{source}")
    assert made.returncode == 0, made.stderr
    [folder] = (tmp_path / "backups").iterdir()
    assert json.loads((folder / "manifest.json").read_text())["database_file"] == "database.sqlite3"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"  # secrets inside: the operator's eyes only
    shutil.rmtree(media)
    restored = script("restore", url=f"sqlite:///{target}")
    assert restored.returncode == 0, restored.stderr
    with sqlite3.connect(target) as db:
        assert db.execute("SELECT v FROM t").fetchall() == [("kept",)]
    assert (media / "renditions" / "a.webp").read_bytes() == b"RIFF-not-really"
    refused = script("restore", url=f"sqlite:///{target}")
    assert refused.returncode == 2 and "already exists" in refused.stderr
