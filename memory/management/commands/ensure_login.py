from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction

from memory.engine import audit
from memory.management.commands._base import OmniaCommand, refuse
from memory.roles import ADMINS, EDITORS, READERS

# What each role makes of an account (memory/roles.py): a reader is any active account,
# an editor is in the editors group, an admin is a staff account (the admin site opens to it).
_ROLE_GROUPS = {"reader": [], "editor": [EDITORS], "admin": []}


class Command(OmniaCommand):
    help = (
        "Create (or reset) a local login for the inspector, with a role: reader, editor or admin."
    )
    examples = (
        "--username designer --password omnia-demo",
        "--username qa --password omnia-qa --role reader",
        "--username writer --password omnia-writer --role editor",
        "--username root --password omnia-root --superuser",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="designer")
        parser.add_argument("--password", required=True)
        parser.add_argument(
            "--role",
            choices=sorted(_ROLE_GROUPS),
            default="admin",
            help="reader: reads; editor: also edits aliases and memories, runs cycles; "
            "admin (default): also rebuilds, and opens /admin/",
        )
        parser.add_argument(
            "--superuser", action="store_true", help="every permission, users and groups too"
        )

    def handle(
        self, *args, username: str, password: str, role: str, superuser: bool, **options
    ) -> None:
        # `--username ''` made an admin named "" and `--password ''` was taken (issue 29).
        if not username.strip():
            raise refuse("--username must not be empty")
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            raise refuse(
                f"--username {username[:40]!r}: use letters, digits and @ . + - _ only"
            ) from None
        if len(username) > 150:
            raise refuse("--username is longer than 150 characters")
        if not password.strip():
            raise refuse("--password must not be empty")
        with transaction.atomic():
            user, created = self._ensure(username, password, role, superuser)
            # A login made or reset is a write like any other: one audit row (never the password).
            audit.record(
                "login.create" if created else "login.reset",
                username,
                actor=audit.cli_actor(),
                after={"role": "superuser" if superuser else role},
            )
        shown = "superuser" if superuser else role
        self.stdout.write(f"{'created' if created else 'updated'} login {username} ({shown})")

    @staticmethod
    def _ensure(username: str, password: str, role: str, superuser: bool):
        user, created = get_user_model().objects.get_or_create(username=username)
        user.is_staff = role == "admin" or superuser
        user.is_superuser = superuser
        user.set_password(password)
        user.save()
        # The login ends up exactly as asked: a role given again replaces the one before.
        user.groups.remove(*Group.objects.filter(name__in=[READERS, EDITORS, ADMINS]))
        for name in _ROLE_GROUPS[role]:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
        return user, created
