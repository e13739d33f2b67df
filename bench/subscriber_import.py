"""A CSV import of 100,000 subscribers (issue 39): how long the admin's request takes, and the worker's import.

Why: the import ran inside the request (one request for 100,000 addresses, and a task queued per
address). Now the request only stores the file; a worker imports it in batches (newsletters/imports.py).
This measures both sides on a real PostgreSQL:

- the request: the admin's import form posted with the file (Django's test client, signed in as a
  superuser made for the run); the task it queues on commit is recorded, not sent;
- the worker: ``newsletters.imports.run`` in a process of its own, as a Celery worker runs it: wall time,
  its CPU time (on a shared machine the steadier figure) and its memory (VmRSS before, the peak after:
  ``ru_maxrss``).

Every address is new and imported without the consent box, so each is owed a confirmation (written in
its row; sending them is the sweep's batches' work, not measured here). The run's subscribers, its
import and its user are deleted afterwards.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> .venv/bin/python -m bench.subscriber_import [rows]
"""
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER = """
import json, resource, sys, time, django
django.setup()
from django.conf import settings
settings.DEBUG = False  # as in production: no query log growing in memory
from newsletters import imports

def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

before = rss_kib()
cpu_before = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
started = time.perf_counter()
imports.run(int(sys.argv[1]))
used = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - started, "rss_before_kib": before, "rss_peak_kib": used.ru_maxrss,
                  "cpu_seconds": used.ru_utime + used.ru_stime - cpu_before}))
"""


def main(rows: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.dev")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from newsletters import tasks
    from newsletters.models import Subscriber, SubscriberImport

    call_command("migrate", verbosity=0)
    settings.DEBUG = False  # as in production: the 6 MB upload is not copied into a query log
    run = uuid.uuid4().hex[:8]
    domain = f"import-bench-{run}.example.org"
    text = "email,follows,cadence\n" + "".join(
        f"reader{n}@{domain},wire tag:python,{'daily' if n % 5 == 0 else ''}\n" for n in range(rows))
    user = get_user_model().objects.create_superuser(f"import-bench-{run}", password=None)
    queued = []
    tasks.import_subscribers.apply_async = lambda args=(), **options: queued.append(args)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    try:
        cpu, started = time.process_time(), time.perf_counter()
        response = client.post(reverse("admin:newsletters_subscriber_import"),
                               {"file": SimpleUploadedFile("bench.csv", text.encode(), content_type="text/csv")})
        request_seconds, request_cpu = time.perf_counter() - started, time.process_time() - cpu
        assert response.status_code == 302, response.status_code
        job = SubscriberImport.objects.get(requested_by=user)
        assert queued == [(job.pk,)] and not Subscriber.objects.filter(email__endswith=domain).exists()
        worker = subprocess.run([sys.executable, "-c", WORKER, str(job.pk)], cwd=ROOT, check=True,
                                capture_output=True, text=True)
        measured = json.loads(worker.stdout.strip().splitlines()[-1])
        job.refresh_from_db()
        assert (job.state, job.created, job.confirmations) == ("done", rows, rows), job.__dict__
        assert Subscriber.objects.filter(email__endswith=domain).count() == rows
        return {"rows": rows, "file_bytes": len(text.encode()), "request_seconds": round(request_seconds, 3),
                "request_cpu_seconds": round(request_cpu, 3),
                "import_seconds": round(measured["seconds"], 2),
                "import_cpu_seconds": round(measured["cpu_seconds"], 2),
                "rows_per_second": round(rows / measured["seconds"]),
                "worker_rss_before_mib": round(measured["rss_before_kib"] / 1024, 1),
                "worker_rss_peak_mib": round(measured["rss_peak_kib"] / 1024, 1)}
    finally:
        with connection.cursor() as cursor:  # 100,000 rows: a delete in SQL, not Django's collector's IN lists
            cursor.execute("DELETE FROM newsletters_subscription WHERE subscriber_id IN "
                           "(SELECT id FROM newsletters_subscriber WHERE email LIKE %s)", ["%@import-bench-%"])
            cursor.execute("DELETE FROM newsletters_subscriber WHERE email LIKE %s", ["%@import-bench-%"])
        SubscriberImport.objects.filter(requested_by=user).delete()
        user.delete()


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000), indent=2))
