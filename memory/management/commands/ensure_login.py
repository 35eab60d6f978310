from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create (or reset) a local admin login for the inspector (a staff account)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="designer")
        parser.add_argument("--password", required=True)
        parser.add_argument("--superuser", action="store_true")

    def handle(self, *args, username: str, password: str, superuser: bool, **options) -> None:
        user, created = get_user_model().objects.get_or_create(username=username)
        user.is_staff = True
        user.is_superuser = superuser or user.is_superuser
        user.set_password(password)
        user.save()
        self.stdout.write(f"{'created' if created else 'updated'} login {username}")
