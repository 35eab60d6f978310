"""The saves themselves: the list with provenance, one save, and its delete (admins)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory.engine import saves as engine_saves
from memory.selectors import saves as save_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS
from memory.web.auth import user_of
from memory.web.schemas import SaveDeletedOut, SaveListOut, SaveOut

router = Router()


def _out(save) -> dict:
    found = save_reads.provenance(save)
    found["imported_at"] = found["imported_at"].isoformat()
    found["counts"] = {k: v for k, v in found["counts"].items() if isinstance(v, int)}
    return found


@router.get("/saves", response={200: SaveListOut, **READ_ERRORS}, url_name="saves")
def list_saves(request: HttpRequest):
    """Every save this inspector holds, by name, with where its rows came from."""
    access.require_reader(request)
    items = [_out(save) for save in engine_saves.live_saves()]
    return {"items": items, "count": len(items)}


@router.get("/saves/{save}", response={200: SaveOut, **READ_ERRORS}, url_name="save")
def get_save(request: HttpRequest, save: str):
    """One save's provenance: source file, size, SHA-256, era, worlds, rows, command, who."""
    access.require_reader(request)
    return _out(engine_saves.get_save(save))


@router.delete(
    "/saves/{save}", response={200: SaveDeletedOut, **WRITE_ERRORS}, url_name="save_delete"
)
def delete_save(request: HttpRequest, save: str):
    """Remove the save and every row under it, in one transaction, audited (admins)."""
    access.require_admin(request)
    deleted = engine_saves.delete_save(save, actor=user_of(request))
    return {"name": deleted.name, "rows_deleted": deleted.rows, "total": deleted.total}
