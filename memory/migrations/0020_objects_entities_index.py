from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0019_buffer_text_index")]

    operations = [
        # The pages read a save's entities by type, world and id (the viewer list, the leak
        # pages' which-viewers-are-behind): from this index alone, never through the rows,
        # whose aliases_json (kilobytes for a viewer who knows hundreds) sits before is_agent.
        # At 2,000 entities that read was 3-4 ms a statement through the rows (issue 25).
        migrations.RunSQL(
            "CREATE INDEX idx_objects_entities ON objects(game_save_id, type, world_id, id, "
            "is_agent)",
            "DROP INDEX idx_objects_entities",
        ),
    ]
