"""Presence and autosave on the admin's change forms (issue 37, editing/; docs/editing.md), read from the
environment; base.py imports it."""
import os

EDITING_PRESENCE_HEARTBEAT_SECONDS = int(os.environ.get("EDITING_PRESENCE_HEARTBEAT_SECONDS", "30"))
EDITING_PRESENCE_TIMEOUT_SECONDS = int(os.environ.get("EDITING_PRESENCE_TIMEOUT_SECONDS", "60"))
EDITING_AUTOSAVE_SECONDS = int(os.environ.get("EDITING_AUTOSAVE_SECONDS", "5"))  # at most one autosave this often
EDITING_AUTOSAVE_MAX_BYTES = int(os.environ.get("EDITING_AUTOSAVE_MAX_BYTES", str(512 * 1024)))
# Retention (newsroom/retention.py, beside the other RETENTION_* in base.py): unsaved changes nobody came back to.
RETENTION_AUTOSAVE_DAYS = int(os.environ.get("RETENTION_AUTOSAVE_DAYS", "30"))
