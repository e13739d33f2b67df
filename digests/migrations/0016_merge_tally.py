"""``MergeTally``: each repository's published merges per week, kept by PostgreSQL's triggers.

A reference counts in the week (UTC) it was merged, from the moment it is
published (``first_published_at``, which migration 0014's triggers keep). Every
change to either, to its repository, or its deletion inserts a -1 row for what
it counted before and a +1 row for what it counts now; a row is never updated
by a trigger, so publishing takes no lock on a shared counter and concurrent
publishes never wait on one another here. ``MergeTally.objects.fold`` (beat,
``digests.tasks.fold_merge_tallies``) sums the rows in effect. A scheduled
digest's references carry its future time and count from then, as the reader
sees them.

SQLite, the development database, has no triggers for this: the chart counts
live there (``digests.views.weekly_merges``).
"""
import django.db.models.deletion
from django.db import migrations, models

WEEK = "date_trunc('week', {row}.merged_at AT TIME ZONE 'UTC')::date"

POSTGRESQL = f"""
CREATE FUNCTION digests_merge_tally_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.first_published_at IS NOT NULL AND OLD.merged_at IS NOT NULL THEN
        INSERT INTO digests_mergetally (repository_id, week, counted_from, merged)
        VALUES (OLD.repository_id, {WEEK.format(row="OLD")}, OLD.first_published_at, -1);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.first_published_at IS NOT NULL AND NEW.merged_at IS NOT NULL THEN
        INSERT INTO digests_mergetally (repository_id, week, counted_from, merged)
        VALUES (NEW.repository_id, {WEEK.format(row="NEW")}, NEW.first_published_at, 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER reference_merge_tally_inserted AFTER INSERT ON digests_reference FOR EACH ROW
    WHEN (NEW.first_published_at IS NOT NULL AND NEW.merged_at IS NOT NULL)
    EXECUTE FUNCTION digests_merge_tally_changed();
CREATE TRIGGER reference_merge_tally_updated AFTER UPDATE ON digests_reference FOR EACH ROW
    WHEN (OLD.first_published_at IS DISTINCT FROM NEW.first_published_at
          OR OLD.merged_at IS DISTINCT FROM NEW.merged_at OR OLD.repository_id IS DISTINCT FROM NEW.repository_id)
    EXECUTE FUNCTION digests_merge_tally_changed();
CREATE TRIGGER reference_merge_tally_deleted AFTER DELETE ON digests_reference FOR EACH ROW
    WHEN (OLD.first_published_at IS NOT NULL AND OLD.merged_at IS NOT NULL)
    EXECUTE FUNCTION digests_merge_tally_changed();

CREATE FUNCTION digests_merge_tally_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM digests_mergetally;
    RETURN NULL;
END $$;
CREATE TRIGGER reference_merge_tally_truncated AFTER TRUNCATE ON digests_reference
    FOR EACH STATEMENT EXECUTE FUNCTION digests_merge_tally_truncated();
"""

POSTGRESQL_REVERSE = """
DROP TRIGGER reference_merge_tally_inserted ON digests_reference;
DROP TRIGGER reference_merge_tally_updated ON digests_reference;
DROP TRIGGER reference_merge_tally_deleted ON digests_reference;
DROP TRIGGER reference_merge_tally_truncated ON digests_reference;
DROP FUNCTION digests_merge_tally_changed();
DROP FUNCTION digests_merge_tally_truncated();
"""

#: The references published so far, one row per repository, week and publication time.
BACKFILL = f"""
INSERT INTO digests_mergetally (repository_id, week, counted_from, merged)
SELECT repository_id, {WEEK.format(row="digests_reference")}, first_published_at, count(*)
FROM digests_reference WHERE first_published_at IS NOT NULL AND merged_at IS NOT NULL
GROUP BY 1, 2, 3
"""


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
        schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_REVERSE)


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0015_digestrepository_digest_order'),
    ]

    operations = [
        migrations.CreateModel(
            name='MergeTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('week', models.DateField(help_text='The Monday, in UTC, of the week the references were merged in.')),
                ('counted_from', models.DateTimeField(help_text='When the change takes effect: the publication time.')),
                ('merged', models.IntegerField(help_text='How many merges this adds (negative: removes).')),
                ('repository', models.ForeignKey(db_constraint=False, help_text="Not a constraint: a repository's deletion withdraws its references, which writes the rows that cancel its counts.", on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='digests.repository')),
            ],
            options={
                'indexes': [models.Index(fields=['repository', 'week'], include=('counted_from', 'merged'), name='mergetally_repository_week')],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
