"""Failed sign-ins are counted by django-axes (its own tables) now: the `throttle` cache table
that 0005 made goes. Reversing makes it again, the way 0005 did."""

from django.core.management import call_command
from django.db import migrations

TABLE = "memory_login_throttle"


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


def create(apps, schema_editor):
    call_command("createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("memory", "0005_login_throttle_cache")]
    operations = [migrations.RunPython(drop, create)]
