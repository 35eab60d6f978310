"""What every command shares: refused input is one clear line on stderr and exit status 2."""

from __future__ import annotations

from django.core.management.base import CommandError


def refuse(message: str) -> CommandError:
    return CommandError(message, returncode=2)
