"""Standing in for the workers that re-render after a rename (``publishing.rerenders``), in the test's process.

A rename records what it owes and queues its task after the commit; in a test the commit never comes
(or, with ``REDIS_URL``, no worker reads the suite's queue), so a test runs the owed rows itself,
through the tasks a worker would run.
"""
from blog import tasks as blog_tasks
from blog.models import PostRerender
from digests import tasks as digest_tasks
from digests.models import DigestRerender


def run_rerenders() -> int:
    """Run every re-render owed, as the workers would; returns how many rows ran."""
    ran = 0
    for model, task in ((PostRerender, blog_tasks.rerender), (DigestRerender, digest_tasks.rerender)):
        for pk in model.objects.order_by("pk").values_list("pk", flat=True):
            ran += task(pk)
    return ran
