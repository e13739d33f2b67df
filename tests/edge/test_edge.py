"""Through the real Varnish (tests/edge/conftest.py): what is cached, what never is, and purges.

Content is created in the test's database (the app processes read it); edits go through the
API of the running app, so purges travel the production path: the app's signals, a Celery
task on the topology's workers, an xkey purge at the edge. Slugs are unique per test, as
the edge keeps its cache for the whole session.
"""
import datetime
import re
import threading
import time
import uuid

import httpx
import pytest
from django.utils import timezone

from accounts.models import ApiToken
from blog.factories import PostFactory
from publishing.workflow import Status

from .conftest import wait_for



@pytest.fixture(autouse=True)
def committed(edge, django_db_blocker):
    """Rows a test writes are committed at once and stay (slugs and usernames are unique).

    Not pytest-django's transactional_db: its flush after each test recreates the content types
    under the running app processes, which cache their ids (django-reversion then fails).
    """
    with django_db_blocker.unblock():
        yield

#: Purges run on a Celery worker after the write's commit: this is a correctness bound, not a target
#: (`make bench` measures publish -> visible; docs/benchmarks.md "Edge").
VISIBLE_WITHIN = 15.0


def unique(word: str) -> str:
    return f"{word}-{uuid.uuid4().hex[:8]}"


def user_model():
    """Not pytest-django's django_user_model: it asks for `db`, whose transaction the app processes never see."""
    from django.contrib.auth import get_user_model

    return get_user_model()


@pytest.fixture
def token():
    user = user_model().objects.create_superuser(unique("boss"), password="pw")
    return ApiToken.issue(user, "edge tests", [scope.value for scope in ApiToken.Scope])[1]


def post_json(post, **changes) -> dict:
    payload = {
        "title": post.title, "slug": post.slug, "body": post.body, "excerpt": post.excerpt,
        "disclosure": post.disclosure, "authors": [{"slug": author.slug} for author in post.ordered_authors()],
        "tags": sorted(tag.name for tag in post.tags.all()),
    }
    return {**payload, **changes}


def test_an_anonymous_page_is_served_from_the_edge_the_second_time(edge):
    post = PostFactory(slug=unique("cached"), title="Cached at the edge")
    with edge.client() as client:
        first = client.get(f"/posts/{post.slug}/")
        second = client.get(f"/posts/{post.slug}/")
        # A reader carrying a stale csrftoken and an analytics cookie shares the same cached page.
        third = client.get(f"/posts/{post.slug}/", headers={"Cookie": "csrftoken=stale; _ga=GA1.2.3"})
    assert first.status_code == second.status_code == third.status_code == 200
    assert (first.headers["X-Cache"], second.headers["X-Cache"], third.headers["X-Cache"]) == ("MISS", "HIT", "HIT")
    assert "s-maxage" in second.headers["Cache-Control"] and "public" in second.headers["Cache-Control"]
    assert "Cached at the edge" in second.text
    for internal in ("Surrogate-Key", "xkey", "X-Page-Cache", "X-Varnish", "Set-Cookie"):
        assert internal not in second.headers, internal


def test_the_internal_headers_show_only_to_a_purger_asking_for_them(edge):
    post = PostFactory(slug=unique("debug"))
    with edge.client() as client:
        client.get(f"/posts/{post.slug}/")
        debug = client.get(f"/posts/{post.slug}/", headers={"X-Edge-Debug": "1"})
    assert f"post-{post.pk}" in debug.headers["Surrogate-Key"].split()
    assert "site" in debug.headers["Surrogate-Key"].split()


def test_etag_and_if_none_match_work_through_the_edge(edge):
    post = PostFactory(slug=unique("etag"))
    with edge.client() as client:
        client.get(f"/posts/{post.slug}/")
        cached = client.get(f"/posts/{post.slug}/")
        revisit = client.get(f"/posts/{post.slug}/", headers={"If-None-Match": cached.headers["ETag"]})
        other = client.get(f"/posts/{post.slug}/", headers={"If-None-Match": '"not-this-one"'})
    assert cached.headers["X-Cache"] == "HIT"
    assert revisit.status_code == 304 and revisit.headers["X-Cache"] == "HIT" and not revisit.content
    assert other.status_code == 200


def staff_session(edge, user) -> str:
    """Log `user` in through the admin's login form, as a browser would; return the session cookie.

    (The app processes have their own secret key and password hashers, so a session minted
    here would not be theirs.)
    """
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode("a long enough password", hasher.salt())
    user.save(update_fields=["password"])
    with edge.client() as client:
        form = client.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        login = client.post("/admin/login/?next=/admin/", data={
            "csrfmiddlewaretoken": token, "username": user.username, "password": "a long enough password",
        })
        assert login.status_code == 302 and "sessionid" in client.cookies, login.text[:500]
        return client.cookies["sessionid"]


def test_staff_only_and_unpublished_content_never_comes_from_the_edge(edge, token):
    staff = user_model().objects.create_superuser(unique("staff"), password="pw")
    session = {"Cookie": f"sessionid={staff_session(edge, staff)}; csrftoken=x"}
    draft = PostFactory(slug=unique("draft"), title="Secret draft title", status=Status.DRAFT, published_at=None)
    with edge.client() as client:
        for _ in range(2):  # staff first: a cached staff answer would then reach the anonymous reader
            preview = client.get(f"/preview/posts/{draft.pk}/", headers=session)
            admin = client.get("/admin/", headers=session)
            api = client.get(f"/api/v1/posts/{draft.slug}", headers={"Authorization": f"Bearer {token}"})
            assert preview.status_code == admin.status_code == api.status_code == 200
            assert "Secret draft title" in preview.text and "Secret draft title" in api.text
            assert preview.headers["X-Cache"] == admin.headers["X-Cache"] == api.headers["X-Cache"] == "MISS"
        anonymous = [
            client.get(f"/preview/posts/{draft.pk}/"),
            client.get(f"/posts/{draft.slug}/"),
            client.get(f"/api/v1/posts/{draft.slug}"),
            client.get("/admin/"),
        ]
    for response in anonymous:
        assert "Secret draft title" not in response.text, response.url
        assert response.status_code in (302, 404), response.url


def test_editing_a_post_purges_its_pages_and_leaves_unrelated_ones_cached(edge, token):
    a = PostFactory(slug=unique("edited"), title="Before the edit", tags=[unique("tag-a")])
    b_tag = unique("tag-b")
    b = PostFactory(slug=unique("untouched"), title="Not edited", tags=[b_tag])
    pages = {"a": f"/posts/{a.slug}/", "b": f"/posts/{b.slug}/", "b_tag": f"/tags/{b_tag}/"}
    with edge.client() as client:
        for _ in range(2):
            warm = {name: client.get(url) for name, url in pages.items()}
        assert {name: response.headers["X-Cache"] for name, response in warm.items()} == dict.fromkeys(pages, "HIT")

        edit = client.put(f"/api/v1/posts/{a.slug}", json=post_json(a, title="After the edit"),
                          headers={"Authorization": f"Bearer {token}"})
        assert edit.status_code == 200, edit.text
        seen = []

        def fresh():
            response = client.get(pages["a"])
            seen.append((response.headers["X-Cache"], "After the edit" in response.text))
            return seen[-1][1]

        assert wait_for(fresh, VISIBLE_WITHIN), f"the edit never reached the edge: {seen[-3:]}"
        # The first fresh copy came from the app (a purge, not an expiry), and no old copy followed it.
        assert seen[-1][0] == "MISS"
        assert all(not is_new for _, is_new in seen[:-1])
        assert client.get(pages["a"]).headers["X-Cache"] == "HIT"
        assert client.get(pages["b"]).headers["X-Cache"] == "HIT"
        assert client.get(pages["b_tag"]).headers["X-Cache"] == "HIT"


def test_publishing_makes_a_post_visible_at_the_edge(edge, token):
    post = PostFactory(slug=unique("publish"), title="Freshly published", status=Status.DRAFT, published_at=None)
    with edge.client() as client:
        assert client.get(f"/posts/{post.slug}/").status_code == 404
        client.get("/posts/")
        published = client.post(f"/api/v1/posts/{post.slug}/status", json={"status": "published"},
                                headers={"Authorization": f"Bearer {token}"})
        assert published.status_code == 200, published.text
        assert wait_for(lambda: client.get(f"/posts/{post.slug}/").status_code == 200, VISIBLE_WITHIN)
        assert wait_for(lambda: post.slug in client.get("/posts/").text, VISIBLE_WITHIN)


def test_a_scheduled_post_is_visible_at_the_edge_within_5_seconds_of_its_time(edge, token):
    post = PostFactory(slug=unique("scheduled"), title="Scheduled", status=Status.DRAFT, published_at=None)
    at = (timezone.now() + datetime.timedelta(seconds=4)).replace(microsecond=0)
    with edge.client() as client:
        scheduled = client.post(f"/api/v1/posts/{post.slug}/status",
                                json={"status": "published", "published_at": at.isoformat()},
                                headers={"Authorization": f"Bearer {token}"})
        assert scheduled.status_code == 200, scheduled.text
        before = client.get(f"/posts/{post.slug}/")
        assert timezone.now() < at, "the machine is too slow for this test's 4 s lead"
        assert before.status_code == 404  # and it may now be cached as such
        client.get(f"/posts/{post.slug}/")
        deadline = at + datetime.timedelta(seconds=5)
        visible = wait_for(lambda: client.get(f"/posts/{post.slug}/").status_code == 200,
                           (deadline - timezone.now()).total_seconds())
    assert visible, f"not visible at the edge by {deadline.isoformat()} (scheduled for {at.isoformat()})"


def test_killing_one_app_instance_under_load_fails_no_request(edge):
    posts = [PostFactory(slug=unique("load")) for _ in range(3)]
    failures, done = [], []
    stop = threading.Event()

    def read(worker: int):
        with edge.client() as client:
            n = 0
            while not stop.is_set():
                n += 1
                # Half the requests miss the cache (a new query string), so they reach an instance.
                url = f"/posts/{posts[n % 3].slug}/" + (f"?w={worker}-{n}" if n % 2 else "")
                try:
                    status = client.get(url).status_code
                except Exception as error:  # a refused or reset connection is a failure too
                    failures.append(repr(error))
                    continue
                done.append(status)
                if status != 200:
                    failures.append(f"{url}: {status}")

    readers = [threading.Thread(target=read, args=(worker,)) for worker in range(4)]
    for reader in readers:
        reader.start()
    time.sleep(1.5)
    pid = edge.supervisorctl("pid", "app1").strip()
    killed = pid.isdigit()
    if killed:
        import os
        import signal

        os.killpg(int(pid), signal.SIGKILL)  # gunicorn, master and workers; supervisord restarts it
    time.sleep(4)
    stop.set()
    for reader in readers:
        reader.join()
    assert killed, f"app1 was not running: {pid!r}"
    assert len(done) > 20, "too few requests to say anything"
    assert failures == []


def test_an_edit_through_one_instance_is_never_served_stale_by_the_other(edge, token):
    """The in-process page cache across instances: the edge may refetch from either right after a purge."""
    post = PostFactory(slug=unique("across"), title="Before, as app2 cached it")
    app1, app2 = edge.app_urls
    with httpx.Client(timeout=10) as client:
        for _ in range(2):
            assert "Before, as app2 cached it" in client.get(f"{app2}/posts/{post.slug}/").text
        edit = client.put(f"{app1}/api/v1/posts/{post.slug}", json=post_json(post, title="After, through app1"),
                          headers={"Authorization": f"Bearer {token}"})
        assert edit.status_code == 200, edit.text
        again = client.get(f"{app2}/posts/{post.slug}/")
    # Failed once in CI on a loaded machine, unexplained: the status and the cache's word make the next one so.
    assert "After, through app1" in again.text, (again.status_code, again.headers.get("X-Page-Cache"),
                                                 again.headers.get("Age"), again.text[:300])


def test_a_worker_killed_with_sigkill_is_restarted_by_the_supervisor(edge):
    """Issue 17: nobody restarts a killed worker by hand; supervisord does (deploy/supervisord.conf).

    tests/faults restarts its worker itself and measures what follows; this proves the
    restart itself in the topology `make up` runs.
    """
    import os
    import signal
    from pathlib import Path

    log = Path(edge.env["TOPOLOGY_DIR"]) / "logs" / "worker1.log"
    assert wait_for(lambda: " ready." in log.read_text(errors="replace"), timeout=60), "worker1 never became ready"
    readies = log.read_text(errors="replace").count(" ready.")
    before = edge.supervisorctl("pid", "worker1").strip()
    assert before.isdigit(), f"worker1 was not running: {before!r}"
    os.killpg(int(before), signal.SIGKILL)  # the worker and its pool

    def restarted() -> bool:
        pid = edge.supervisorctl("pid", "worker1").strip()
        return pid.isdigit() and pid != before and "RUNNING" in edge.supervisorctl("status", "worker1")

    assert wait_for(restarted, timeout=60), edge.supervisorctl("status")
    assert wait_for(lambda: log.read_text(errors="replace").count(" ready.") > readies, timeout=60), \
        "the restarted worker did not become ready within 60 s"


RENAME = "from blog.models import Post; post = Post.objects.get(slug={slug!r}); post.title = {title!r}; post.save()"


def shell_edit(env: dict[str, str], command: list[str], slug: str, title: str) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, *command, "shell", "-c", RENAME.format(slug=slug, title=title)],
                            cwd=edge_project_dir(), env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def edge_project_dir():
    from .conftest import PROJECT_DIR

    return PROJECT_DIR


@pytest.mark.parametrize("how", ["manage.py shell (development settings)", "make manage (the topology's settings)"])
def test_an_edit_from_a_process_outside_the_topology_reaches_the_edge(edge, how):
    """Issue 25: a title changed in `manage.py shell` -- same DATABASE_URL and REDIS_URL, the default
    settings module, no EDGE_PURGE_BACKEND -- never reached the edge; the page stayed stale for a day."""
    post = PostFactory(slug=unique("shell"), title="Before the shell")
    with edge.client() as client:
        for _ in range(2):
            warm = client.get(f"/posts/{post.slug}/")
        assert warm.headers["X-Cache"] == "HIT" and "Before the shell" in warm.text
        if how.startswith("manage.py"):
            env = {name: value for name, value in edge.env.items()
                   if not name.startswith(("EDGE_", "DJANGO_SETTINGS_MODULE", "TOPOLOGY_DIR"))}
            shell_edit({**env, "DJANGO_SETTINGS_MODULE": "repojournal.settings.dev"}, ["manage.py"], post.slug,
                       "After the shell")
        else:
            shell_edit(edge.env, ["deploy/topology.py", "manage"], post.slug, "After the shell")
        assert wait_for(lambda: "After the shell" in client.get(f"/posts/{post.slug}/").text, VISIBLE_WITHIN), \
            "the edit never reached the edge"
