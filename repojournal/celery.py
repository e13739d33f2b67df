"""The Celery application. Configuration lives in Django settings under CELERY_*."""
import os
import sys

from celery import Celery

# One rule, as in README.md and docs/operations.md: the `celery` command (worker, beat) defaults
# to development settings, like manage.py, so the README's `celery -A repojournal worker -B` runs
# on a fresh checkout; wsgi.py/asgi.py default to production. Production sets
# DJANGO_SETTINGS_MODULE explicitly for every process. The package __init__ imports this module in
# web processes too, so the dev default applies only when the Celery command line is running
# (it has imported celery.bin.celery before loading `-A repojournal`).
if "celery.bin.celery" in sys.modules:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.dev")
else:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.prod")

app = Celery("repojournal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
