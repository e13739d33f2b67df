"""The GitHub token's lock is a lease: a living holder keeps it, a killed one loses it within the lease."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.core.cache.backends.redis import RedisCache

from ingestion.polling import TokenBusy, token_fingerprint, token_lock

ROOT = Path(__file__).resolve().parents[2]


def test_a_living_holder_keeps_the_lock_past_its_lease(settings):
    settings.INGESTION_TOKEN_LEASE = 1
    token = f"token-{uuid.uuid4()}"
    with token_lock(token):
        time.sleep(2.5)  # two and a half leases: only renewal keeps it
        with pytest.raises(TokenBusy):
            with token_lock(token):
                pass
    with token_lock(token):  # released on exit
        pass


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="a lock shared by processes lives in Redis: set REDIS_URL")
def test_a_holder_killed_with_sigkill_loses_the_lock_within_the_lease():
    token, lease = f"token-{uuid.uuid4()}", 2
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import django, time; django.setup(); from ingestion.polling import token_lock\n"
            f"with token_lock({token!r}):\n    print('held', flush=True); time.sleep(120)")],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "repojournal.settings.dev", "INGESTION_TOKEN_LEASE": str(lease)})
    shared = RedisCache(os.environ["REDIS_URL"], {})
    key = f"ingestion:github-token:{token_fingerprint(token)}"
    try:
        assert holder.stdout.readline().strip() == "held"
        time.sleep(lease * 1.5)
        assert shared.get(key) == "polling", "renewed while the holder lives"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        killed = time.monotonic()
        assert shared.get(key) == "polling", "a killed holder cannot release it"
        while shared.get(key) is not None and time.monotonic() < killed + lease + 5:
            time.sleep(0.1)
        assert shared.get(key) is None
        assert time.monotonic() - killed <= lease + 0.5
    finally:
        holder.kill()
        shared.delete(key)
