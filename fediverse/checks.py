"""A system check (``manage.py check``, run by migrate and at deploy) naming existing handle clashes.

Rows written before the admin refused clashes may share a handle; WebFinger then answers for the
first holder only (fixed actors, then topics, then authors), so editors are told which to rename.
"""
from django.core import checks
from django.db import DatabaseError

from .handles import clashes


@checks.register(checks.Tags.database)
def handle_clashes(app_configs=None, databases=None, **kwargs):
    if not databases:  # needs the database: runs with `check --database default` and before migrate
        return []
    try:
        problems = clashes()
    except DatabaseError:  # tables not migrated yet
        return []
    return [checks.Warning(problem, hint="Rename the topic's slug or the author's handle in the admin.",
                           id="fediverse.W001") for problem in problems]
