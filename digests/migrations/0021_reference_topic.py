"""``Reference.topic``: its repository's topic, kept by the database, and the newsroom's index on it.

The newsroom counts, for each drafted digest, the references of its topic that arrived after the
draft. Read through the repository, that count probed an index once per repository of the topic:
11 drafts x 33 repositories on ``make bench``'s full archive (2 ms), three a topic at a tenth, so the
page slowed as topics grew. With the topic on the reference, each draft's count is one range of the
(topic, created_at) index: the references counted, whatever the topic's size.

The value is derived, so triggers keep it on both PostgreSQL and SQLite, whoever writes
(``save()``, ``bulk_create``, upserts, ``update()``, raw SQL): an inserted reference takes its
repository's topic, a reference moved to another repository takes that one's, a value written over
it is replaced, and a repository moved to another topic (or left without one when its topic is
deleted: Django sets it NULL with an UPDATE) carries its references with it. On PostgreSQL the
insert reads the repository ``FOR SHARE``, so a reference stored while its repository moves waits
for the move and takes the new topic, and the move, which waits for the insert, updates it.

No constraint and no column index of its own (the (topic, created_at) index serves the look-ups):
the column is derived, and without them SQLite adds and drops it without remaking the table.
"""
import django.db.models.deletion
from django.db import migrations, models

TOPIC_OF = "(SELECT topic_id FROM digests_repository WHERE id = NEW.repository_id{lock})"

POSTGRESQL = f"""
CREATE FUNCTION digests_reference_topic_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.topic_id := {TOPIC_OF.format(lock=" FOR SHARE")};
    RETURN NEW;
END $$;
CREATE TRIGGER reference_topic_inserted BEFORE INSERT ON digests_reference FOR EACH ROW
    EXECUTE FUNCTION digests_reference_topic_kept();
CREATE TRIGGER reference_topic_kept BEFORE UPDATE ON digests_reference FOR EACH ROW
    WHEN (OLD.repository_id IS DISTINCT FROM NEW.repository_id OR OLD.topic_id IS DISTINCT FROM NEW.topic_id)
    EXECUTE FUNCTION digests_reference_topic_kept();

CREATE FUNCTION digests_reference_topic_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE digests_reference SET topic_id = NEW.topic_id WHERE repository_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER repository_topic_moved AFTER UPDATE ON digests_repository FOR EACH ROW
    WHEN (OLD.topic_id IS DISTINCT FROM NEW.topic_id) EXECUTE FUNCTION digests_reference_topic_moved();
"""

POSTGRESQL_REVERSE = """
DROP TRIGGER reference_topic_inserted ON digests_reference;
DROP TRIGGER reference_topic_kept ON digests_reference;
DROP TRIGGER repository_topic_moved ON digests_repository;
DROP FUNCTION digests_reference_topic_kept();
DROP FUNCTION digests_reference_topic_moved();
"""

#: SQLite: one writer at a time; its triggers cannot change NEW, so each sets the row it follows.
SQLITE_SET = f"UPDATE digests_reference SET topic_id = {TOPIC_OF.format(lock='')} WHERE id = NEW.id;"
SQLITE = [
    f"CREATE TRIGGER reference_topic_inserted AFTER INSERT ON digests_reference BEGIN {SQLITE_SET} END",
    f"""CREATE TRIGGER reference_topic_kept AFTER UPDATE OF repository_id, topic_id ON digests_reference
    WHEN NEW.topic_id IS NOT {TOPIC_OF.format(lock='')} BEGIN {SQLITE_SET} END""",
    """CREATE TRIGGER repository_topic_moved AFTER UPDATE OF topic_id ON digests_repository
    WHEN OLD.topic_id IS NOT NEW.topic_id
    BEGIN UPDATE digests_reference SET topic_id = NEW.topic_id WHERE repository_id = NEW.id; END""",
]
SQLITE_TRIGGERS = {"reference_topic_inserted": "digests_reference", "reference_topic_kept": "digests_reference",
                   "repository_topic_moved": "digests_repository"}

BACKFILL = ("UPDATE digests_reference SET topic_id = (SELECT topic_id FROM digests_repository "
            "WHERE digests_repository.id = digests_reference.repository_id)")


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRESQL)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)
    else:
        raise NotImplementedError(f"Reference.topic has no triggers for {vendor}.")
    schema_editor.execute(BACKFILL)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_REVERSE)
    else:
        for name in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER {name}")


class Migration(migrations.Migration):

    dependencies = [
        ("digests", "0020_admin_list_count"),
    ]

    operations = [
        migrations.AddField(
            model_name="reference",
            name="topic",
            field=models.ForeignKey(
                blank=True, db_constraint=False, db_index=False, editable=False, null=True,
                on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="digests.topic",
                help_text="Its repository's topic, kept by the database itself (triggers, migration 0021) when a "
                          "reference is stored or moved and when its repository changes topic; a value written "
                          "here is replaced. The newsroom counts a topic's new references by it."),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
        migrations.RemoveIndex(model_name="reference", name="reference_repository_created"),
        migrations.AddIndex(
            model_name="reference",
            index=models.Index(fields=["topic", "created_at"], name="reference_topic_created"),
        ),
    ]
