"""The narrow copy of citations the reader search walks (PostgreSQL only)."""
from django.db import models


class SearchCitation(models.Model):
    """A citation as the reader search walks it: the citing digest's order and state, the reference's vector.

    Finding the references most recently cited by a published digest walked
    digests, their citations and then each wide reference row to check its
    stored ``search_vector``: for the benchmark's query about 30 row visits,
    with TOAST reads, per match. This narrow copy holds, per citation, what
    that walk reads, so the partial index below is walked newest first and each
    check is one short row.

    Derived data, PostgreSQL only: triggers (``publishing/search_migrations.py``)
    keep it true on every insert, update and delete of citations, of a
    digest's status, date or publication time and of a reference's vector,
    ``bulk_create`` and ``update()`` included. The ``search_vector`` column is
    not a model field (like the others, see ``repojournal/search_migrations``).
    On SQLite the table stays empty; the fallback search does not read it.
    """

    citation_id = models.BigIntegerField(primary_key=True)
    digest_id = models.BigIntegerField()
    reference_id = models.BigIntegerField()
    status = models.CharField(max_length=20)
    date = models.DateField()
    published_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["-date", "-published_at", "-digest_id"], name="searchcitation_published",
                condition=models.Q(status="published"),
            ),
        ]
