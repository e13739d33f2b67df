"""Read replicas on a real primary and a real streaming replica (tests/replicas/conftest.py).

A paused replay (``pg_wal_replay_pause()``) makes the replica a copy that is behind by
exactly what the test writes next, which shows where each read went: a reader that sees the
old version read the replica; a writer that sees its own write read the primary.
"""
import re
import threading
import time

import httpx

from tests.edge.conftest import wait_for

DIGEST = {"topic": {"slug": "pytorch"}, "date": "2026-06-02", "headline": "Float8 lands", "summary": "Float8 is on."}


def api(stack, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=f"{stack.app_url}/api/v1", headers=headers, timeout=15)


def sign_in(stack) -> httpx.Client:
    """A browser session of the writer's user in the admin (the login form, CSRF and all)."""
    browser = httpx.Client(base_url=stack.app_url, timeout=15, follow_redirects=True)
    browser.get("/admin/login/")
    answer = browser.post("/admin/login/?next=/admin/", data={
        "username": "writer", "password": "a long test password 1",
        "csrfmiddlewaretoken": browser.cookies["csrftoken"], "next": "/admin/"})
    assert answer.status_code == 200 and "sessionid" in browser.cookies, answer.text[:500]
    return browser


def replica_lines(stack) -> tuple[int, str]:
    answer = httpx.get(f"{stack.app_url}/health/?format=text", timeout=15)
    return answer.status_code, "\n".join(line for line in answer.text.splitlines() if line.startswith("Replica"))


def keep_reading(client: httpx.Client, path: str, seconds: float = 2.5) -> None:
    """Reads for a while, so each app process checks the replica (at most once a second) and has seen it current."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert client.get(path).status_code == 200


def caught_up(stack) -> bool:
    status, lines = replica_lines(stack)
    return status == 200 and "lag_seconds=0.0" in lines


def replica_reads(stack) -> int:
    """Index and sequential scans of the digest table on the replica: reads it served."""
    [(scans,)] = stack.on_replica(
        "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables WHERE relname = 'digests_digest'")
    return int(scans)


def test_reads_go_to_the_replica_writers_read_their_writes_and_lag_leaves_it_out(replicated):
    writer, reader = api(replicated, replicated.tokens[0]), api(replicated, replicated.tokens[1])
    created = writer.post("/digests/", json=DIGEST)
    assert created.status_code == 201, created.text
    slug = created.json()["slug"]
    assert wait_for(lambda: replicated.on_replica(f"SELECT 1 FROM digests_digest WHERE slug = '{slug}'"), 10)
    assert wait_for(lambda: reader.get(f"/digests/{slug}").status_code == 200, 10)
    assert caught_up(replicated), replica_lines(replicated)
    status = replicated.topology("status")  # `make status`
    assert "Replica(alias='replica_1', lag_seconds=0.0): OK" in status.stdout, status.stdout

    keep_reading(reader, f"/digests/{slug}")
    replicated.on_replica("SELECT pg_wal_replay_pause()")
    paused_at = time.monotonic()
    try:
        edited = {**writer.get(f"/digests/{slug}").json(), "headline": "Float8 by default"}
        put = writer.put(f"/digests/{slug}", json=edited)
        assert put.status_code == 200, put.text
        for _ in range(20):  # the writer reads its own write, every time, with the PUT's ETag
            mine = writer.get(f"/digests/{slug}")
            assert mine.json()["headline"] == "Float8 by default"
            assert mine.headers["ETag"] == put.headers["ETag"]
        # Another client, which wrote nothing, reads the replica: the version before the PUT -- through
        # the ORM (the detail) and through the compiled list statement (api/compiled.py) alike.
        assert reader.get(f"/digests/{slug}").json()["headline"] == "Float8 lands"
        assert [item["headline"] for item in reader.get("/digests/").json()["items"]] == ["Float8 lands"]
        assert [item["headline"] for item in writer.get("/digests/").json()["items"]] == ["Float8 by default"]
        assert api(replicated, None).get("/digests/").status_code == 200
        # An editor's browser session reads the primary: the admin shows the new headline at once.
        browser = sign_in(replicated)
        digest_id = writer.get(f"/digests/{slug}").json()["id"]
        assert "Float8 by default" in browser.get(f"/admin/digests/digest/{digest_id}/change/").text
        # Behind by more than DATABASE_REPLICA_MAX_LAG (5 s): left out, so the reader gets the primary --
        # within that bound and the once-a-second check (the lag is measured as an upper bound).
        assert wait_for(lambda: reader.get(f"/digests/{slug}").json()["headline"] == "Float8 by default", 30)
        assert time.monotonic() - paused_at < 5 + 2.5
        status, lines = replica_lines(replicated)
        assert status == 500 and "behind the primary" in lines, lines
    finally:
        replicated.on_replica("SELECT pg_wal_replay_resume()")
    assert wait_for(lambda: caught_up(replicated), 30)
    # Caught up, the replica serves readers again: paused once more, it hides the next write from them.
    assert reader.get(f"/digests/{slug}").json()["headline"] == "Float8 by default"
    keep_reading(reader, f"/digests/{slug}")
    replicated.on_replica("SELECT pg_wal_replay_pause()")
    try:
        edited = {**writer.get(f"/digests/{slug}").json(), "headline": "Float8 everywhere"}
        assert writer.put(f"/digests/{slug}", json=edited).status_code == 200
        assert writer.get(f"/digests/{slug}").json()["headline"] == "Float8 everywhere"
        assert reader.get(f"/digests/{slug}").json()["headline"] == "Float8 by default"
    finally:
        replicated.on_replica("SELECT pg_wal_replay_resume()")


def test_a_digest_published_while_the_replica_is_behind_is_read_from_the_primary_by_everyone(replicated):
    """After a public change no reader reads a replica for a while: the edge keeps what it fetches after a purge."""
    writer, anonymous = api(replicated, replicated.tokens[0]), api(replicated, None)
    created = writer.post("/digests/", json={**DIGEST, "date": "2026-06-03", "headline": "Published at once"})
    assert created.status_code == 201, created.text
    slug = created.json()["slug"]
    assert wait_for(lambda: replicated.on_replica(f"SELECT 1 FROM digests_digest WHERE slug = '{slug}'"), 10)
    keep_reading(anonymous, "/digests/")
    replicated.on_replica("SELECT pg_wal_replay_pause()")
    try:
        published = writer.post(f"/digests/{slug}/status", json={"status": "published"})
        assert published.status_code == 200, published.text
        # The replica still holds a draft (404 to a reader); every reader reads the primary now.
        [(status,)] = replicated.on_replica(f"SELECT status FROM digests_digest WHERE slug = '{slug}'")
        assert status != "published"
        assert anonymous.get(f"/digests/{slug}").status_code == 200
        with httpx.Client(base_url=replicated.edge_url, timeout=15) as reader:
            assert wait_for(lambda: "Published at once" in reader.get("/wire/").text, 10)
    finally:
        replicated.on_replica("SELECT pg_wal_replay_resume()")


def test_stopping_the_replica_under_load_through_the_edge_costs_no_reader_an_error(replicated):
    """Token API reads and searches (never kept by the edge) while the replica's PostgreSQL stops and returns."""
    token = replicated.tokens[1]
    answers: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def load(path: str) -> None:
        with httpx.Client(base_url=replicated.edge_url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"} if "api" in path else {}) as client:
            number = 0
            while not stop.is_set():
                number += 1
                answer = client.get(path.replace("{n}", str(number)))
                answers.append(answer.status_code)
                if answer.status_code != 200:
                    failures.append(f"{path}: {answer.status_code} {answer.text[:200]}")

    before = replica_reads(replicated)
    threads = [threading.Thread(target=load, args=(path,)) for path in
               ("/api/v1/digests/", "/api/v1/digests/?topic=pytorch", "/search/?q=float8+{n}", "/api/v1/posts/")]
    for thread in threads:
        thread.start()
    try:
        # (Within DATABASE_REPLICA_PIN_SECONDS of another test's publication, readers still read the primary.)
        assert wait_for(lambda: replica_reads(replicated) > before, 20), "the load is not read from the replica"
        time.sleep(1)
        served_before_stop = len(answers)
        replicated.replica("stop")
        time.sleep(5)
        served_while_stopped = len(answers) - served_before_stop
        replicated.replica("start", "--primary", replicated.postgres.url, "--port", str(replicated.replica_port))
        back = replica_reads(replicated)
        assert wait_for(lambda: replica_reads(replicated) > back, 20), (
            "readers did not return to the replica: " + replicated.log_path("app1").read_text()[-3000:])
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert served_while_stopped > 20, served_while_stopped
    assert failures == [], failures[:5]
    assert len(answers) > 100 and set(answers) == {200}
    worker_log = "\n".join(replicated.log_path(name).read_text(errors="replace") for name in ("app1", "app2")
                           if replicated.log_path(name).exists())
    assert re.search(r"replica_1 is left out|replica replica_1 failed", worker_log), "no app process noticed the stop"
