"""The bench refuses a Redis database other Celery workers consume (bench/database.py says why)."""
import os
import subprocess
import sys
import threading

import pytest

from tests.perf.test_bench import ROOT, bench_environment


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="boots a real worker on the bench's broker: needs REDIS_URL")
def test_the_bench_refuses_a_queue_another_worker_consumes(tmp_path):
    env = bench_environment(tmp_path)
    name = f"intruder-{os.getpid()}@%h"
    worker_env = {**env, "DJANGO_SETTINGS_MODULE": "repojournal.settings.bench"}
    command = [sys.executable, "-m", "celery", "-A", "repojournal", "worker", "--pool=solo", "--loglevel=info",
               "-n", name, "-Q", f"guard-test-{os.getpid()}", "--without-gossip", "--without-mingle"]
    worker = subprocess.Popen(command, cwd=ROOT, env=worker_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    watchdog = threading.Timer(90, worker.kill)  # a worker that never says "ready" fails, not hangs
    watchdog.start()
    try:
        lines = []
        for line in worker.stdout:
            lines.append(line)
            if " ready." in line or len(lines) > 400:
                break
        assert any(" ready." in line for line in lines), "".join(lines)
        refused = subprocess.run([sys.executable, "-m", "bench", "--quick", "--output", str(tmp_path / "out.json")],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        watchdog.cancel()
        worker.terminate()
        worker.wait(timeout=30)
    assert refused.returncode != 0
    assert "Celery workers already consume its queue" in refused.stderr
    assert f"intruder-{os.getpid()}@" in refused.stderr
    assert not (tmp_path / "out.json").exists()  # refused before anything was generated or measured
