"""Template context every page shares."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from memory.models import Save
from memory.selectors.saves import world_crosses_year


def world_years(request: HttpRequest) -> SimpleLazyObject:
    """Whether the times a page shows need their year. A page of one save asks its save; a
    page across saves (the overview, the triage queue) asks every save. Lazy, and one per
    request: a page that shows no time never asks, and the rows a view makes in Python and
    the template's tags ask the same one."""
    found = getattr(request, "_world_years", None)
    if found is None:
        save = getattr(request, "save", None)

        def crosses() -> bool:
            return world_crosses_year([save] if save is not None else list(Save.objects.all()))

        found = request._world_years = SimpleLazyObject(crosses)
    return found


def world_clock(request: HttpRequest) -> dict[str, Any]:
    """`world_years` (world_years) for every template."""
    return {"world_years": world_years(request)}
