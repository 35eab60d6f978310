from django.db import migrations

# known_ids_among's second read, the ids that are not ASCII, on PostgreSQL (0029 gave SQLite
# its partial index): without one it read every object of the save and measured each id (0.5
# of its 0.6 ms at 2,021 objects, on every viewer page's aliases panel). Holding what the read
# takes (id, world_id) it is an index-only probe of no rows in an all-ASCII save (0.12 ms for
# both reads, on a store brought in by import_omnia: its ANALYZE counts the index's rows).
CREATE = (
    "CREATE INDEX idx_objects_not_ascii ON objects(game_save_id) INCLUDE (id, world_id) "
    "WHERE OCTET_LENGTH(id) <> CHAR_LENGTH(id)"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX idx_objects_not_ascii")


class Migration(migrations.Migration):
    dependencies = [("memory", "0029_objects_folded_id_indexes")]

    operations = [migrations.RunPython(create, drop)]
