"""Data migration: the role groups readers, editors, admins with their model permissions.

Idempotent (get_or_create, permissions added as a set) and reversible (the groups go).
Permissions are normally created after all migrations ran (post_migrate); on a fresh
database they do not exist yet here, so they are created first with the historical models.
"""

from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Frozen here, as they were when this migration was written: a migration must not change
# when live code does. Later changes to a role's permissions get a migration of their own.
_READ = (
    "memory.view_worldobject",
    "memory.view_attribute",
    "memory.view_bufferentry",
    "memory.view_memorysession",
    "memory.view_episode",
    "memory.view_aliaschange",
    "memory.view_auditlog",
)
_EDIT = _READ + (
    "memory.change_worldobject",
    "memory.add_aliaschange",
    "memory.change_bufferentry",
    "memory.add_bufferentry",
)
_ADMIN = _EDIT + (
    "memory.change_memorysession",
    "memory.delete_memorysession",
    "memory.change_episode",
    "memory.delete_episode",
    "memory.add_apitoken",
    "memory.view_apitoken",
    "memory.delete_apitoken",
)
GROUP_PERMISSIONS = {"readers": _READ, "editors": _EDIT, "admins": _ADMIN}


def create_groups(apps, schema_editor) -> None:
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        codenames = [perm.split(".", 1)[1] for perm in wanted]
        perms = Permission.objects.filter(content_type__app_label="memory", codename__in=codenames)
        group.permissions.add(*perms)


def drop_groups(apps, schema_editor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=list(GROUP_PERMISSIONS)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0003_fold_read_indexes"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, drop_groups)]
