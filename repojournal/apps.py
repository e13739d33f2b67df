from django.apps import AppConfig


class RepoJournalConfig(AppConfig):
    """The project package as an app, so site-wide signal handlers connect in every process."""

    name = "repojournal"
    verbose_name = "RepoJournal"

    def ready(self):
        from . import caching

        caching.connect_signals()
