"""``DigestRepository`` carries its digest's status, date and publication time, copied by the database.

A repository's page lists the newest published digests citing it. Read through
the links alone, that was a sort of every digest citing the repository (fifty at
the benchmark's fifth scale, hundreds at full scale); with the digest's sort key
and state on the link, a partial index hands them out in order and the page
stops at twenty. Triggers keep the copy on every insert of a link and every
change of a digest's status, date or publication time (``update()`` included),
on PostgreSQL and SQLite, as for ``Reference.first_published_at`` (0014). On
PostgreSQL a new link locks its digest ``FOR SHARE`` while it copies, so a
publication committed meanwhile is either waited for and read, or waits and
then rewrites the link.
"""
from django.db import migrations, models

POSTGRESQL = """
CREATE FUNCTION digests_digestrepository_copy_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT status, date, published_at INTO NEW.digest_status, NEW.digest_date, NEW.digest_published_at
    FROM digests_digest WHERE id = NEW.digest_id FOR SHARE;
    IF NOT FOUND THEN  -- a deferred foreign key: the digest's own insert comes later in the transaction
        NEW.digest_status := '';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER digestrepository_copy_digest BEFORE INSERT OR UPDATE ON digests_digestrepository
    FOR EACH ROW EXECUTE FUNCTION digests_digestrepository_copy_digest();

CREATE FUNCTION digests_digestrepository_from_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE digests_digestrepository
    SET digest_status = NEW.status, digest_date = NEW.date, digest_published_at = NEW.published_at
    WHERE digest_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER digestrepository_from_digest AFTER UPDATE ON digests_digest FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.date IS DISTINCT FROM NEW.date
          OR OLD.published_at IS DISTINCT FROM NEW.published_at)
    EXECUTE FUNCTION digests_digestrepository_from_digest();
CREATE TRIGGER digestrepository_from_new_digest AFTER INSERT ON digests_digest FOR EACH ROW
    EXECUTE FUNCTION digests_digestrepository_from_digest();  -- links inserted first (deferred keys)
"""

POSTGRESQL_REVERSE = """
DROP TRIGGER digestrepository_copy_digest ON digests_digestrepository;
DROP TRIGGER digestrepository_from_digest ON digests_digest;
DROP TRIGGER digestrepository_from_new_digest ON digests_digest;
DROP FUNCTION digests_digestrepository_copy_digest();
DROP FUNCTION digests_digestrepository_from_digest();
"""

COPY = (
    "UPDATE digests_digestrepository SET "
    "digest_status = coalesce((SELECT status FROM digests_digest WHERE id = digests_digestrepository.digest_id), ''), "
    "digest_date = (SELECT date FROM digests_digest WHERE id = digests_digestrepository.digest_id), "
    "digest_published_at = (SELECT published_at FROM digests_digest WHERE id = digests_digestrepository.digest_id)"
)
SQLITE = [
    f"""CREATE TRIGGER digestrepository_copy_digest AFTER INSERT ON digests_digestrepository
    BEGIN {COPY} WHERE id = NEW.id; END""",
    """CREATE TRIGGER digestrepository_from_digest AFTER UPDATE ON digests_digest
    WHEN OLD.status IS NOT NEW.status OR OLD.date IS NOT NEW.date OR OLD.published_at IS NOT NEW.published_at
    BEGIN UPDATE digests_digestrepository
          SET digest_status = NEW.status, digest_date = NEW.date, digest_published_at = NEW.published_at
          WHERE digest_id = NEW.id; END""",
]


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)
    else:
        raise NotImplementedError(f"DigestRepository's copy of its digest has no triggers for {vendor}.")
    schema_editor.execute(COPY)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_REVERSE)
    else:
        for name in ("digestrepository_copy_digest", "digestrepository_from_digest"):
            schema_editor.execute(f"DROP TRIGGER {name}")


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0014_reference_first_published_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='digestrepository',
            name='digest_date',
            field=models.DateField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='digestrepository',
            name='digest_published_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='digestrepository',
            name='digest_status',
            field=models.CharField(blank=True, editable=False, max_length=20),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
        migrations.AddIndex(
            model_name='digestrepository',
            index=models.Index(condition=models.Q(('digest_status', 'published')), fields=['repository', '-digest_date', '-digest_published_at', '-digest'], name='digestrepository_published'),
        ),
    ]
