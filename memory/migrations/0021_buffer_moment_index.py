from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0020_objects_entities_index")]

    operations = [
        # An event is the rows of one moment, every witness's (memory/engine/events.py): a
        # buffer page counts the witnesses of its lines, and the event page reads them, by
        # timestamp across owners, which no other index of the table leads with. A bulk import
        # drops and rebuilds it with the others (worlds/bulk.py).
        migrations.RunSQL(
            "CREATE INDEX idx_buffer_moment ON buffer_entries(game_save_id, timestamp)",
            "DROP INDEX idx_buffer_moment",
        ),
    ]
