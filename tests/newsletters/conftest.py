"""A real SMTP server (aiosmtpd) on loopback for the newsletter tests, and settings that send to it.

``smtp_server.messages`` holds what it received, parsed (``email.message.EmailMessage``, with the
envelope's recipients in ``X-Rcpt-To``-free form: ``received[i].rcpt_tos``). ``smtp_server.refuse``
maps an address to the reply its RCPT TO gets (``"451 4.3.0 Try later"``, ``"550 5.1.1 No such user"``).
"""
import email
import email.policy
import socket
import threading
from dataclasses import dataclass, field

import pytest
from aiosmtpd.controller import Controller


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: email.message.EmailMessage


@dataclass
class RecordingHandler:
    received: list[Received] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reply = self.refuse.get(address.lower())
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        parsed = email.message_from_bytes(envelope.original_content or envelope.content, policy=email.policy.default)
        with self.lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), parsed))
        return "250 Message accepted for delivery"


class SmtpServer:
    def __init__(self):
        self.handler = RecordingHandler()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    @property
    def received(self) -> list[Received]:
        return list(self.handler.received)

    @property
    def messages(self) -> list[email.message.EmailMessage]:
        return [item.message for item in self.received]

    @property
    def refuse(self) -> dict[str, str]:
        return self.handler.refuse

    def to(self, address: str) -> list[email.message.EmailMessage]:
        return [item.message for item in self.received if address in item.rcpt_tos]

    def start(self):
        self.controller.start()

    def stop(self):
        self.controller.stop()


@pytest.fixture
def smtp_server(settings):
    """A running SMTP server, and Django's SMTP backend pointed at it (as EMAIL_HOST/EMAIL_PORT would)."""
    server = SmtpServer()
    server.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 5
    yield server
    server.stop()
