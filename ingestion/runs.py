"""An IngestionRun around every poll, delivery and feed fetch."""
from contextlib import contextmanager

from django.utils import timezone

from .importers import Counts
from .models import IngestionRun


@contextmanager
def recorded_run(source: str, subject: str, **links):
    """Record a run: yields (run, counts); a raised error marks the run failed and propagates.

    The caller may set ``run.status`` (e.g. to IGNORED) before leaving the block.
    """
    run = IngestionRun.objects.create(source=source, subject=subject[:500], **links)
    counts = Counts()
    try:
        yield run, counts
    except Exception as exc:
        _finish(run, counts, IngestionRun.Status.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    _finish(run, counts, run.status if run.status != IngestionRun.Status.RUNNING else IngestionRun.Status.SUCCEEDED)


def _finish(run: IngestionRun, counts: Counts, status: str, error: str = "") -> None:
    run.status = status
    run.error = error or run.error
    run.finished_at = timezone.now()
    for name, value in counts.as_dict().items():
        setattr(run, name, value)
    run.save()
