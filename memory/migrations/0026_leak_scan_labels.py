from django.db import migrations, models


def behind(apps, schema_editor):
    # A scan stored before this knew no labels: until each is rescanned, pages check its
    # viewer's labels themselves (a stale scan is what tells them to).
    apps.get_model("memory", "LeakScan")._base_manager.update(stale=True)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0025_leak_scan_flaws"),
    ]

    operations = [
        migrations.AddField(
            model_name="leakscan",
            name="labels_json",
            field=models.TextField(default="[]"),
        ),
        migrations.RunPython(behind, migrations.RunPython.noop),
    ]
