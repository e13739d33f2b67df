"""The newsletter phase's SMTP server: aiosmtpd in its own process, counting what it receives.

``python -m bench.smtp_sink PORT STATUS_FILE`` serves SMTP on 127.0.0.1:PORT and keeps, per kind of
recipient (the ceiling's one address, or a subscriber), the messages received, the first and the last
arrival times, the recipients that got more than one message and the distinct List-Unsubscribe URLs
(every email must carry its own). It writes them to STATUS_FILE every STATUS_EVERY seconds and once
more when terminated, so the bench reads progress without talking to it and the final counts after.
It keeps no message: at 100,000 recipients only counters and a set of hashes stay in memory.

Why a process of its own: the bench process and the worker under test must not share its event loop
or its CPU accounting; the ceiling (a bare smtplib loop) and the worker send to this same process.
"""
import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter

from aiosmtpd.controller import Controller

STATUS_EVERY = 0.2
#: The ceiling's smtplib loop sends to this address: its messages are counted apart from the subscribers'.
CEILING_ADDRESS = "ceiling@ceiling.bench.invalid"
UNSUBSCRIBE = b"\r\nList-Unsubscribe: <"


class Bucket:
    def __init__(self):
        self.messages, self.first, self.last, self.repeated = 0, None, None, 0
        self.per_recipient: Counter = Counter()
        self.unsubscribe_links: set[int] = set()

    def add(self, recipients: list[str], content: bytes, now: float) -> None:
        self.messages += 1
        self.first = self.first or now
        self.last = now
        for recipient in recipients:
            self.per_recipient[recipient] += 1
            self.repeated += self.per_recipient[recipient] == 2  # counted once, when it gets its second
        start = content.find(UNSUBSCRIBE)
        if start >= 0:
            start += len(UNSUBSCRIBE)
            self.unsubscribe_links.add(hash(content[start:content.find(b">", start)]))

    def status(self) -> dict:
        return {"messages": self.messages, "first": self.first, "last": self.last,
                "recipients": len(self.per_recipient),
                "recipients_with_more_than_one": self.repeated,
                "distinct_unsubscribe_links": len(self.unsubscribe_links)}


class CountingHandler:
    """aiosmtpd's handler: each DATA counted into the ceiling's bucket or the subscribers'."""

    def __init__(self):
        self.buckets = {"ceiling": Bucket(), "subscribers": Bucket()}

    async def handle_DATA(self, server, session, envelope):
        kind = "ceiling" if envelope.rcpt_tos == [CEILING_ADDRESS] else "subscribers"
        self.buckets[kind].add(envelope.rcpt_tos, envelope.content, time.time())
        return "250 Message accepted for delivery"

    def status(self) -> dict:
        return {kind: bucket.status() for kind, bucket in self.buckets.items()}


def write(path: str, status: dict) -> None:
    """Atomically (a reader never sees half a file)."""
    temporary = f"{path}.tmp"
    with open(temporary, "w") as file:
        json.dump(status, file)
    os.replace(temporary, path)


def serve(port: int, status_file: str) -> None:
    handler = CountingHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=port, data_size_limit=None)
    controller.start()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    try:
        while not stopping:
            # The status is built on the server's loop, so no DATA is counted half-way through it.
            status = asyncio.run_coroutine_threadsafe(_status(handler), controller.loop).result()
            write(status_file, {**status, "serving": True})
            time.sleep(STATUS_EVERY)
    finally:
        controller.stop()
        write(status_file, {**handler.status(), "serving": False})


async def _status(handler: CountingHandler) -> dict:
    return handler.status()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
