"""Lighthouse (issue 25) against the real edge: a post page and the home page pass
"uses-text-compression" (text travels compressed) and "uses-long-cache-ttl" (static assets are
cached for a long time).

Lighthouse comes from the npm registry, pinned, installed once into a cache directory
(``$XDG_CACHE_HOME/repojournal``, else ``~/.cache/repojournal``); it drives Debian's Chromium,
headless. Without npm or Chromium the test is skipped, saying which is missing.
"""
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from blog.factories import PostFactory

#: Lighthouse 13 needs Node 22; Debian's Node is 20.
LIGHTHOUSE_VERSION = "12.2.3"
AUDITS = ("uses-text-compression", "uses-long-cache-ttl")
CHROME_FLAGS = ("--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update "
                "--disable-sync --no-first-run --disable-dev-shm-usage")


@pytest.fixture(autouse=True)
def committed(edge, django_db_blocker):
    """Rows are committed at once, so the app processes see them (as in test_edge.py)."""
    with django_db_blocker.unblock():
        yield


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repojournal"


@pytest.fixture(scope="session")
def lighthouse() -> tuple[str, str]:
    """(the lighthouse command, Chromium's path), installing Lighthouse on first use.

    npm installs into a folder of its own, renamed into place when complete, so an interrupted
    or concurrent install never leaves a half-filled cache behind.
    """
    npm, chromium = shutil.which("npm"), shutil.which("chromium")
    if not npm or not chromium:
        pytest.skip("Lighthouse needs npm and Chromium (Debian: apt-get install npm chromium)")
    target = cache_dir() / f"lighthouse-{LIGHTHOUSE_VERSION}"
    command = target / "node_modules" / ".bin" / "lighthouse"
    if not command.exists():
        partial = target.with_name(f"{target.name}.partial-{uuid.uuid4().hex[:8]}")
        subprocess.run([npm, "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--save-exact",
                        f"lighthouse@{LIGHTHOUSE_VERSION}"], check=True, capture_output=True, timeout=600)
        try:
            partial.rename(target)
        except OSError:  # another session finished first
            shutil.rmtree(partial, ignore_errors=True)
    return str(command), chromium


def audit(lighthouse: tuple[str, str], url: str, output: Path) -> dict:
    """The two audits' results for `url` (one Lighthouse run, no throttling: bytes and headers are judged)."""
    command, chromium = lighthouse
    run = subprocess.run(
        [command, url, "--output=json", f"--output-path={output}", f"--only-audits={','.join(AUDITS)}",
         "--throttling-method=provided", "--quiet", f"--chrome-flags={CHROME_FLAGS}"],
        env={**os.environ, "CHROME_PATH": chromium}, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(output.read_text())
    assert not report.get("runtimeError"), report["runtimeError"]
    return {name: report["audits"][name] for name in AUDITS}


def test_a_post_page_and_the_home_page_pass_compression_and_cache_lifetime_audits(edge, lighthouse, tmp_path):
    post = PostFactory(slug=f"lighthouse-{uuid.uuid4().hex[:8]}", body="A paragraph readers came for. " * 200)
    for name, path in (("post", f"/posts/{post.slug}/"), ("home", "/")):
        results = audit(lighthouse, edge.url + path, tmp_path / f"{name}.json")
        failing = {audit_name: (result["score"], result.get("details", {}).get("items"))
                   for audit_name, result in results.items() if result["score"] != 1}
        assert failing == {}, f"{path}: {failing}"
