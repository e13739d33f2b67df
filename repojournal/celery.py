"""The Celery application. Configuration lives in Django settings under CELERY_*."""
import os

from celery import Celery

# Like wsgi.py: a server process defaults to production settings. `make worker` and
# manage.py choose dev settings explicitly. (The package __init__ imports this module,
# so a dev default here would win over wsgi.py's production default.)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.prod")

app = Celery("repojournal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
