"""bench/load.py's wrk runs, against a real local server and the real wrk."""
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import load

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None,
                                reason="wrk is not installed (apt-get install wrk); CI installs it")


class Pages(BaseHTTPRequestHandler):
    """/slow answers in 1.3 s, longer than a 1 s window; anything else at once. Keep-alive, as gunicorn."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/slow":
            time.sleep(1.3)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """A server answering each connection in a thread of its own (pytest-httpserver answers one at a time)."""
    with ThreadingHTTPServer(("127.0.0.1", 0), Pages) as running:
        thread = threading.Thread(target=running.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{running.server_address[1]}"
        running.shutdown()


def test_a_window_that_no_response_fits_in_is_run_again_for_longer(server):
    """A page slower than the window measured "0 req/s" in CI (--quick's 1 s windows, a loaded machine)."""
    measured = load.wrk(f"{server}/slow", 1)
    assert measured.requests > 0 and measured.rps > 0
    assert measured.seconds >= 1.9  # the 2 s run, not the 1 s one
    assert measured.errors == 0


def test_a_window_with_responses_is_run_once(server):
    started = time.monotonic()
    measured = load.wrk(f"{server}/fast", 1)
    assert measured.requests > 10 and time.monotonic() - started < 1.9
