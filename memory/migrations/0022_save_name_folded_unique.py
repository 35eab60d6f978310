# Save names are unique as folded (issue 29): demo, Demo and DEMO cannot coexist.

import django.db.models.functions.text
from django.db import migrations, models


def refuse_folded_duplicates(apps, schema_editor):
    """Existing saves whose names differ only by case would make the index fail with a bare
    IntegrityError; name them and the way out instead. Nothing is renamed behind anyone's back."""
    Save = apps.get_model("memory", "Save")
    seen: dict[str, str] = {}
    clashes = []
    for name in Save.objects.order_by("pk").values_list("name", flat=True):
        first = seen.setdefault(name.lower(), name)
        if first != name:
            clashes.append(f"{first!r} and {name!r}")
    if clashes:
        raise RuntimeError(
            "save names must differ by more than case; these do not: "
            + ", ".join(clashes)
            + ". Delete one of each (manage.py delete_save NAME) or re-import it --as another "
            "name, then migrate again"
        )


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0021_buffer_moment_index'),
    ]

    operations = [
        migrations.RunPython(refuse_folded_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='save',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('name'), name='memory_saves_name_folded_unique'),
        ),
    ]
