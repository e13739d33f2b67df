"""Newsletters (issue 27, newsletters/; docs/newsletters.md), read from the environment; base.py imports it.

Mail goes through Django's email backends. With EMAIL_HOST set (and Django's other EMAIL_* names:
EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS, EMAIL_USE_SSL, EMAIL_TIMEOUT), over
SMTP there, whatever the settings module — `make run` included. Without it, each email is written
as a file under var/mail/ where a developer can read it. EMAIL_BACKEND names any other backend,
such as one of django-anymail's (then ANYMAIL_* holds the provider's keys, and its tracking webhooks
at /newsletters/anymail/<provider>/tracking/ suppress hard bounces and complaints).
"""
import os
from pathlib import Path

from .env import env_bool

BASE_DIR = Path(__file__).resolve().parent.parent.parent

EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL")
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "30"))
EMAIL_FILE_PATH = Path(os.environ.get("EMAIL_FILE_PATH") or BASE_DIR / "var" / "mail")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.filebased.EmailBackend"
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "RepoJournal <newsletter@repojournal.localhost>")
# The domain of every Message-ID we write (stable: <kind.item.subscriber@domain>).
NEWSLETTERS_MESSAGE_ID_DOMAIN = os.environ.get("NEWSLETTERS_MESSAGE_ID_DOMAIN", "repojournal.localhost")
# Deliveries a worker takes at a time over one SMTP connection, and how long it holds them: a worker
# killed mid-batch sends at most this batch twice once its lease runs out (docs/newsletters.md).
NEWSLETTERS_BATCH_SIZE = int(os.environ.get("NEWSLETTERS_BATCH_SIZE", "100"))
NEWSLETTERS_LEASE_SECONDS = int(os.environ.get("NEWSLETTERS_LEASE_SECONDS", "120"))
# Temporary failures (SMTP 4xx, the server away) are retried with exponential backoff up to this
# many seconds, for NEWSLETTERS_MAX_ATTEMPTS tries; permanent ones (5xx) fail at once.
NEWSLETTERS_RETRY_BACKOFF_MAX = int(os.environ.get("NEWSLETTERS_RETRY_BACKOFF_MAX", "900"))
NEWSLETTERS_MAX_ATTEMPTS = int(os.environ.get("NEWSLETTERS_MAX_ATTEMPTS", "12"))
# How often beat mails items published without a message yet, hands back expired leases and queues due work.
NEWSLETTERS_SWEEP_SECONDS = float(os.environ.get("NEWSLETTERS_SWEEP_SECONDS", "30"))
# Items published longer ago than this are never mailed (turning newsletters on does not mail the archive).
NEWSLETTERS_LOOKBACK_HOURS = int(os.environ.get("NEWSLETTERS_LOOKBACK_HOURS", "24"))
# The time zone of a subscription's daily summary time.
NEWSLETTERS_TIME_ZONE = os.environ.get("NEWSLETTERS_TIME_ZONE", "UTC")
# How long a confirmation link works.
NEWSLETTERS_CONFIRM_HOURS = int(os.environ.get("NEWSLETTERS_CONFIRM_HOURS", "48"))
# Sign-ups allowed per address and per client address, "N/s|m|h|d" (then the same answer, and nothing sent).
NEWSLETTERS_RATE_PER_ADDRESS = os.environ.get("NEWSLETTERS_RATE_PER_ADDRESS", "3/h")
NEWSLETTERS_RATE_PER_CLIENT = os.environ.get("NEWSLETTERS_RATE_PER_CLIENT", "20/h")

# django-anymail: a provider's keys, and the shared secret its tracking webhooks present (basic auth).
ANYMAIL = {
    key.removeprefix("ANYMAIL_"): value for key, value in os.environ.items() if key.startswith("ANYMAIL_")
}
