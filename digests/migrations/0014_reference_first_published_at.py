"""``Reference.first_published_at``, kept by the database, and the index a repository's page walks.

The value is derived: the earliest ``published_at`` among the digests with status
"published" that cite the reference (scheduled ones included, so "published
now" stays a comparison with now). Triggers keep it on every insert, update and
delete of citations and every change of a digest's status or publication time,
``bulk_create``, ``update()`` and raw SQL included -- the same approach as the
search's copy of citations (``publishing/search_migrations.py``), here on both
PostgreSQL and SQLite. A stale value written over it (a reference loaded before
a publication and saved after it) is replaced by the computed one.

On PostgreSQL, two transactions can change the citations of one reference at
once (an editor citing it, another publishing a digest that cites it). Each
trigger first locks what it reads -- the citing digest ``FOR SHARE``, then the
reference -- and reads in a statement of its own, whose snapshot includes
whatever the other transaction committed while this one waited. A citation by
a digest that is not published changes nothing and locks no reference (its
digest's lock keeps it from being published meanwhile), so drafting and editing
drafts never wait on each other; two transactions changing the citations of
published digests wait for one another per reference.
"""
from django.db import migrations, models

MIN_PUBLISHED = (
    "SELECT min(d.published_at) FROM digests_digestreference c JOIN digests_digest d ON d.id = c.digest_id "
    "WHERE c.reference_id = {reference} AND d.status = 'published'"
)

POSTGRESQL = f"""
CREATE FUNCTION digests_reference_first_published(reference bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$ {MIN_PUBLISHED.format(reference="reference")} $$;

CREATE FUNCTION digests_reference_refresh_first_published(refs bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM digests_reference WHERE id = ANY(refs) ORDER BY id FOR NO KEY UPDATE;
    UPDATE digests_reference SET first_published_at = digests_reference_first_published(id)
    WHERE id = ANY(refs) AND first_published_at IS DISTINCT FROM digests_reference_first_published(id);
END $$;

CREATE FUNCTION digests_reference_cited_by_published(digest bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM digests_digest WHERE id = digest FOR SHARE;
    RETURN EXISTS (SELECT 1 FROM digests_digest WHERE id = digest AND status = 'published');
END $$;

CREATE FUNCTION digests_reference_first_published_from_citation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' AND digests_reference_cited_by_published(NEW.digest_id) THEN
        PERFORM digests_reference_refresh_first_published(ARRAY[NEW.reference_id]);
    END IF;
    IF TG_OP <> 'INSERT' AND digests_reference_cited_by_published(OLD.digest_id) THEN
        PERFORM digests_reference_refresh_first_published(ARRAY[OLD.reference_id]);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER reference_first_published_citation AFTER INSERT OR DELETE ON digests_digestreference
    FOR EACH ROW EXECUTE FUNCTION digests_reference_first_published_from_citation();
CREATE TRIGGER reference_first_published_citation_moved AFTER UPDATE ON digests_digestreference FOR EACH ROW
    WHEN (OLD.digest_id IS DISTINCT FROM NEW.digest_id OR OLD.reference_id IS DISTINCT FROM NEW.reference_id)
    EXECUTE FUNCTION digests_reference_first_published_from_citation();

CREATE FUNCTION digests_reference_first_published_from_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM digests_reference_refresh_first_published(
        ARRAY(SELECT reference_id FROM digests_digestreference WHERE digest_id = NEW.id));
    RETURN NULL;
END $$;
CREATE TRIGGER reference_first_published_digest AFTER UPDATE ON digests_digest FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.published_at IS DISTINCT FROM NEW.published_at)
    EXECUTE FUNCTION digests_reference_first_published_from_digest();

CREATE FUNCTION digests_reference_first_published_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.first_published_at := digests_reference_first_published(NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER reference_first_published_kept BEFORE UPDATE ON digests_reference FOR EACH ROW
    WHEN (OLD.first_published_at IS DISTINCT FROM NEW.first_published_at)
    EXECUTE FUNCTION digests_reference_first_published_kept();
CREATE TRIGGER reference_first_published_inserted BEFORE INSERT ON digests_reference FOR EACH ROW
    WHEN (NEW.first_published_at IS NOT NULL)
    EXECUTE FUNCTION digests_reference_first_published_kept();

CREATE FUNCTION digests_reference_first_published_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE digests_reference SET first_published_at = NULL WHERE first_published_at IS NOT NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER reference_first_published_truncated AFTER TRUNCATE ON digests_digestreference
    FOR EACH STATEMENT EXECUTE FUNCTION digests_reference_first_published_truncated();
"""

POSTGRESQL_REVERSE = """
DROP TRIGGER reference_first_published_citation ON digests_digestreference;
DROP TRIGGER reference_first_published_citation_moved ON digests_digestreference;
DROP TRIGGER reference_first_published_truncated ON digests_digestreference;
DROP TRIGGER reference_first_published_digest ON digests_digest;
DROP TRIGGER reference_first_published_kept ON digests_reference;
DROP TRIGGER reference_first_published_inserted ON digests_reference;
DROP FUNCTION digests_reference_first_published_from_citation();
DROP FUNCTION digests_reference_first_published_from_digest();
DROP FUNCTION digests_reference_first_published_kept();
DROP FUNCTION digests_reference_first_published_truncated();
DROP FUNCTION digests_reference_cited_by_published(bigint);
DROP FUNCTION digests_reference_refresh_first_published(bigint[]);
DROP FUNCTION digests_reference_first_published(bigint);
"""

#: SQLite: one writer at a time, so no locking; each trigger recomputes the references it touched.
SQLITE_REFRESH = (
    "UPDATE digests_reference SET first_published_at = ("
    + MIN_PUBLISHED.format(reference="digests_reference.id") + ") WHERE {where};"
)
SQLITE = [
    f"""CREATE TRIGGER reference_first_published_citation_insert AFTER INSERT ON digests_digestreference
    BEGIN {SQLITE_REFRESH.format(where="id = NEW.reference_id")} END""",
    f"""CREATE TRIGGER reference_first_published_citation_delete AFTER DELETE ON digests_digestreference
    BEGIN {SQLITE_REFRESH.format(where="id = OLD.reference_id")} END""",
    f"""CREATE TRIGGER reference_first_published_citation_moved AFTER UPDATE ON digests_digestreference
    WHEN OLD.digest_id IS NOT NEW.digest_id OR OLD.reference_id IS NOT NEW.reference_id
    BEGIN {SQLITE_REFRESH.format(where="id IN (OLD.reference_id, NEW.reference_id)")} END""",
    f"""CREATE TRIGGER reference_first_published_digest AFTER UPDATE ON digests_digest
    WHEN OLD.status IS NOT NEW.status OR OLD.published_at IS NOT NEW.published_at
    BEGIN {SQLITE_REFRESH.format(
        where="id IN (SELECT reference_id FROM digests_digestreference WHERE digest_id = NEW.id)")} END""",
    f"""CREATE TRIGGER reference_first_published_kept AFTER UPDATE OF first_published_at ON digests_reference
    WHEN OLD.first_published_at IS NOT NEW.first_published_at
    BEGIN {SQLITE_REFRESH.format(where="id = NEW.id")} END""",
    f"""CREATE TRIGGER reference_first_published_inserted AFTER INSERT ON digests_reference
    WHEN NEW.first_published_at IS NOT NULL
    BEGIN {SQLITE_REFRESH.format(where="id = NEW.id")} END""",
]
SQLITE_TRIGGERS = [statement.split()[2] for statement in SQLITE]

#: The references already cited, computed once (the triggers keep them from here on).
BACKFILL = (
    "UPDATE digests_reference SET first_published_at = ("
    + MIN_PUBLISHED.format(reference="digests_reference.id")
    + ") WHERE id IN (SELECT reference_id FROM digests_digestreference)"
)


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)
    else:
        raise NotImplementedError(f"Reference.first_published_at has no triggers for {vendor}.")
    schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_REVERSE)
    else:
        for name in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER {name}")


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0013_readeredges_social_card'),
    ]

    operations = [
        migrations.AddField(
            model_name='reference',
            name='first_published_at',
            field=models.DateTimeField(blank=True, editable=False, help_text="The earliest publication time among the published digests citing it (scheduled ones included); empty while no published digest cites it. Kept by the database itself (triggers, migration 0014) on every change to citations and to a digest's status or publication time; a value written here is replaced by the computed one.", null=True),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
        migrations.AddIndex(
            model_name='reference',
            index=models.Index(condition=models.Q(('first_published_at__isnull', False)), fields=['repository', '-merged_at', '-opened_at', '-id'], include=('first_published_at',), name='reference_published_by_repo'),
        ),
    ]
