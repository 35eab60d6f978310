"""The table behind the `throttle` cache: failed-login counts every web process shares."""

from django.core.management import call_command
from django.db import migrations

TABLE = "memory_login_throttle"


def create(apps, schema_editor):
    call_command("createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0)


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_roles")]
    operations = [migrations.RunPython(create, drop)]
