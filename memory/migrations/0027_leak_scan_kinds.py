import json
from collections import Counter

from django.db import migrations, models


def counted(apps, schema_editor):
    # Each scan row's counts from the findings stored with it (the same transaction wrote
    # both): no rescan needed. A save at a time, its findings counted by the database.
    scans = apps.get_model("memory", "LeakScan")._base_manager
    findings = apps.get_model("memory", "LeakFinding")._base_manager
    per_viewer: dict[tuple[int, str], Counter] = {}
    rows = findings.values_list("game_save_id", "viewer_id", "kind").annotate(
        n=models.Count("id")
    )
    for save_id, viewer_id, kind, n in rows.order_by():
        per_viewer.setdefault((save_id, viewer_id), Counter())[kind] = n
    for (save_id, viewer_id), kinds in per_viewer.items():
        scans.filter(game_save_id=save_id, viewer_id=viewer_id).update(
            kinds_json=json.dumps(dict(kinds), sort_keys=True)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0026_leak_scan_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="leakscan",
            name="kinds_json",
            field=models.TextField(default="{}"),
        ),
        migrations.RunPython(counted, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="leakfinding",
            index=models.Index(
                fields=["game_save", "viewer_id", "kind", "text"], name="leak_findings_facets"
            ),
        ),
    ]
