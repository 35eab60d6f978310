from django.db import migrations, models


def take_statistics(apps, schema_editor):
    # A store upgraded in place has statistics for the findings' other indexes and none for
    # this one: SQLite's planner then takes it for the most selective and reads every finding
    # through it (the triage queue 19 -> 55 ms at 20,155 findings). Taken now, of the whole
    # table (a store's findings are a few tens of thousands); on PostgreSQL an index on plain
    # columns needs none, the ANALYZE is harmless.
    # A store with no findings, or (SQLite) no statistics at all, has nothing to mend: left as
    # it is (a new store gets its statistics from its first import).
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM memory_leak_findings)")
        if not cursor.fetchone()[0]:
            return
        if connection.vendor == "sqlite":
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone() is None:
                return
        cursor.execute("ANALYZE memory_leak_findings")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0027_leak_scan_kinds"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="leakfinding",
            index=models.Index(fields=["game_save", "text"], name="leak_findings_words"),
        ),
        migrations.RunPython(take_statistics, migrations.RunPython.noop, elidable=True),
    ]
