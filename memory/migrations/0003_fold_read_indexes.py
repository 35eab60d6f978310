from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_inspector_tables")]

    operations = [
        # Live counts read only retracted rows; a partial index keeps that proportional to them.
        migrations.RunSQL(
            "CREATE INDEX idx_buffer_owner_retracted ON buffer_entries(owner_id, conversation_id, "
            "location_id) WHERE retracted_at IS NOT NULL",
            "DROP INDEX idx_buffer_owner_retracted",
        ),
        migrations.AddIndex(
            model_name="episode",
            index=models.Index(
                fields=["owner"], condition=models.Q(is_open=True), name="idx_episode_open"
            ),
        ),
    ]
