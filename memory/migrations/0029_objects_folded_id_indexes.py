from django.db import migrations

# known_ids_among (the aliases panel's descriptor check, on every viewer page) asks which ids
# of a save casefold to a few words: lowered ASCII ids by these words, and every id that is
# not ASCII (checked in Python). Without indexes it lowered every id of the save (PostgreSQL
# 0.8-1.0 ms at 2,000 entities). The lowered id leads its index, so no other read of the
# objects (each names the save first) is offered it. On SQLite the ids that are not ASCII are
# a partial index, found by the condition the statement writes (knowledge._NOT_ASCII);
# PostgreSQL guesses that condition true of most rows and reads the entities' index for it
# instead (0.3 ms without lowering each id), so it gets no such index to keep.
# Each holds what the statement reads (id, world_id): a planner without statistics prefers
# reading a save's entities' index whole, which holds them too, to an index it must leave.
SQLITE = (
    "CREATE INDEX idx_objects_lower_id ON objects(LOWER(id), game_save_id, id, world_id)",
    "CREATE INDEX idx_objects_not_ascii ON objects(game_save_id, id, world_id) "
    "WHERE LENGTH(CAST(id AS BLOB)) <> LENGTH(id)",
)
POSTGRESQL = (
    "CREATE INDEX idx_objects_lower_id ON objects(LOWER(id), game_save_id) INCLUDE (id, world_id)",
)


def create(apps, schema_editor):
    statements = SQLITE if schema_editor.connection.vendor == "sqlite" else POSTGRESQL
    for sql in statements:
        schema_editor.execute(sql)


def drop(apps, schema_editor):
    schema_editor.execute("DROP INDEX idx_objects_lower_id")
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP INDEX idx_objects_not_ascii")


class Migration(migrations.Migration):
    dependencies = [("memory", "0028_leak_findings_words")]

    operations = [migrations.RunPython(create, drop)]
