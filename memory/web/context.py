"""Template context every page shares."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from memory.models import Save
from memory.selectors.saves import world_crosses_year


def world_clock(request: HttpRequest) -> dict[str, Any]:
    """`world_years`: whether the times a page shows need their year. A page of one save asks
    its save; a page across saves (the overview, the triage queue) asks every save. Lazy: a
    page that shows no time never asks."""
    save = getattr(request, "save", None)

    def crosses() -> bool:
        return world_crosses_year([save] if save is not None else list(Save.objects.all()))

    return {"world_years": SimpleLazyObject(crosses)}
