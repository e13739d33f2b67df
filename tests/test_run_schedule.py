"""`manage.py run_schedule` (repojournal/schedule.py): beat's own entries, each due task run inline.

tests/test_make_run.py starts it for real beside the server, as `make run` does.
"""
import datetime
import io
import logging

import pytest
from celery import beat, shared_task
from celery.signals import before_task_publish, task_prerun
from django.conf import settings
from django.core.management import call_command

from repojournal.celery import app
from repojournal.schedule import InlineScheduler, UnregisteredTasks


def entries(scheduler) -> dict:
    """What each entry runs and when: what beat and the inline scheduler must agree on."""
    return {name: (entry.task, entry.schedule, entry.args, entry.kwargs) for name, entry in scheduler.schedule.items()}


def test_the_inline_scheduler_has_exactly_beats_entries(tmp_path):
    """The entries `celery beat` runs (its PersistentScheduler, as in deploy/supervisord.conf): the settings'
    CELERY_BEAT_SCHEDULE plus what beat adds itself -- read, not copied, so a new entry joins both."""
    persistent = beat.PersistentScheduler(app, schedule_filename=str(tmp_path / "celerybeat-schedule"))
    try:
        beats = entries(persistent)
    finally:
        persistent.close()
    inline = entries(InlineScheduler(app))
    assert inline == beats
    assert set(settings.CELERY_BEAT_SCHEDULE) <= set(inline)
    assert {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()} == {
        name: task for name, (task, *_) in inline.items() if name in settings.CELERY_BEAT_SCHEDULE}


@pytest.mark.django_db
def test_every_due_entry_runs_once_inline_and_nothing_is_sent_to_a_broker():
    scheduler = InlineScheduler(app)
    scheduler.check()
    long_ago = app.now() - datetime.timedelta(days=2)
    for entry in scheduler.schedule.values():
        entry.last_run_at = long_ago  # every entry due, crontab ones included
    ran, published = [], []

    def note_run(sender=None, **kwargs):
        ran.append(sender.name)

    def note_publish(sender=None, **kwargs):
        published.append(sender)

    task_prerun.connect(note_run)
    before_task_publish.connect(note_publish)
    try:
        for _ in range(len(scheduler.schedule) * 2):  # tick() runs one due entry per call and returns 0
            if scheduler.tick() > 0:
                break
    finally:
        task_prerun.disconnect(note_run)
        before_task_publish.disconnect(note_publish)
    assert sorted(ran) == sorted(entry.task for entry in scheduler.schedule.values())
    assert published == []


def test_an_entry_naming_a_task_no_module_registers_is_refused():
    """Beat would send it by name to a broker nobody reads (issue 25's lost deliveries); this says so at start."""
    scheduler = InlineScheduler(app, lazy=True)
    scheduler.update_from_dict({"lost": {"task": "nowhere.tasks.missing", "schedule": 1.0}})
    with pytest.raises(UnregisteredTasks, match=r"lost \(nowhere.tasks.missing\)"):
        scheduler.check()


@shared_task(name="tests.test_run_schedule.failing")
def failing():
    raise RuntimeError("the receiver is away")


@shared_task(name="tests.test_run_schedule.counting")
def counting():
    counting.runs = getattr(counting, "runs", 0) + 1


@pytest.mark.django_db
def test_a_failing_task_is_logged_and_the_others_still_run(caplog):
    scheduler = InlineScheduler(app, lazy=True)
    scheduler.update_from_dict({"fails": {"task": failing.name, "schedule": 60.0},
                                "counts": {"task": counting.name, "schedule": 60.0}})
    counting.runs = 0
    with caplog.at_level(logging.ERROR, logger="repojournal.schedule"):
        for name in ("fails", "counts"):
            scheduler.apply_entry(scheduler.schedule[name])
    assert counting.runs == 1
    [record] = caplog.records
    assert "Scheduled fails (tests.test_run_schedule.failing) failed" in record.getMessage()
    assert record.exc_info[0] is RuntimeError


def test_with_a_broker_the_command_leaves_the_schedule_to_beat(monkeypatch):
    """REDIS_URL set: `make run` goes on starting it, and `make worker`'s beat runs the schedule alone."""
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    out = io.StringIO()
    call_command("run_schedule", stdout=out)  # returns at once: no loop
    assert "beat runs the schedule" in out.getvalue()
