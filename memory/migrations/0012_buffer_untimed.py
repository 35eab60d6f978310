# buffer_entries is created by raw DDL (0001), so the column is added the same way: a
# database default, because imports insert rows with plain SQL that does not name it.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_file_order"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE buffer_entries ADD COLUMN untimed BOOLEAN NOT NULL DEFAULT FALSE",
                    "ALTER TABLE buffer_entries DROP COLUMN untimed",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="bufferentry",
                    name="untimed",
                    field=models.BooleanField(db_default=False),
                )
            ],
        )
    ]
