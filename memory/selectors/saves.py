"""The saves this inspector holds: each one's provenance, and the one-line summary the
overview gives it (worlds, viewers, open leaks, projection lag)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from django.db import connection

from memory.active_save import use
from memory.engine.clock import parse_timestamp
from memory.engine.projections import problems
from memory.engine.saves import live_saves, world_ids
from memory.models import BufferEntry, Save
from memory.selectors import leaks as leak_reads
from memory.selectors import projections as projection_reads


def _loads(text: str, default: Any) -> Any:
    try:
        value = json.loads(text or "")
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def provenance(save: Save) -> dict[str, Any]:
    """Where a save's rows came from: the file, its hash, who brought it and how."""
    return {
        "name": save.name,
        "kind": save.kind,
        "era": save.era,
        "title": save.title,
        "source_name": save.source_name,
        "source_size": save.source_size,
        "source_sha256": save.source_sha256,
        "world_ids": [str(w) for w in _loads(save.world_ids_json, [])],
        "counts": {str(k): v for k, v in _loads(save.counts_json, {}).items()},
        "command": save.command,
        "imported_at": save.imported_at,
        "imported_by": save.imported_by,
    }


@dataclass
class SaveSummary:
    save: Save
    provenance: dict[str, Any]
    viewers: int = 0
    leaks_open: int = 0
    leak_viewers: int = 0  # viewers with at least one open finding
    leak_pending: int = 0
    lag_rows: int = 0
    worlds: list[str] = field(default_factory=list)
    cycle_failure: str = ""  # why the save's last projection cycle failed ("" when it did not)


def summary(save: Save) -> SaveSummary:
    """One save's line on the overview (inside that save)."""
    with use(save):
        tally = leak_reads.leak_tally()
        return SaveSummary(
            save=save,
            provenance=provenance(save),
            viewers=tally.viewers,
            leaks_open=sum(sum(per_kind.values()) for per_kind in tally.counts.values()),
            leak_viewers=len(tally.counts),
            leak_pending=len(tally.pending),
            lag_rows=projection_reads.projection_status()["lag_rows"],
            cycle_failure=problems.cycle_failure(),
            worlds=world_ids(),
        )


def summaries() -> list[SaveSummary]:
    return [summary(save) for save in live_saves()]


def live_row_counts() -> dict[str, int]:
    """The active save's rows per table, as they stand now (what a delete would remove)."""
    from memory.engine.saves import save_scoped_models

    counts = {}
    for model in sorted(save_scoped_models(), key=lambda m: m._meta.db_table):
        n = model.objects.count()
        if n:
            counts[model._meta.db_table] = n
    return counts


# The first and the last timed stamp (text order) of each save asked: two probes of its (save,
# timestamp) index. Raw: the ORM's two correlated subqueries cost more to build and compile
# (0.7 ms on SQLite, 1.1 on PostgreSQL) than the database took to answer them (0.02 / 0.3),
# on every page that shows a time, a buffer fragment's too. It spans saves (the overview
# asks every one), so it names each by its id, not through the active one.
_YEAR_ENDS = (
    "SELECT (SELECT b.timestamp FROM {buffer} b WHERE b.game_save_id = s.id AND NOT b.untimed "
    "ORDER BY b.timestamp LIMIT 1), "
    "(SELECT b.timestamp FROM {buffer} b WHERE b.game_save_id = s.id AND NOT b.untimed "
    "ORDER BY b.timestamp DESC LIMIT 1) "
    "FROM {saves} s WHERE s.id IN ({ids})"
)


def world_crosses_year(saves: list[Save]) -> bool:
    """Whether the world stamps of these saves' memories fall in more than one year: then every
    page of them says the year with each time (issue 28 item 7), so "Dec 31, 11:59 PM" and
    "Jan 1, 12:00 AM" never read as one night. The first and the last stamp in text order of
    each save, all in one statement (a page pays one round trip for them, not two a save)."""
    if not saves:
        return False
    sql = _YEAR_ENDS.format(
        buffer=BufferEntry._meta.db_table,
        saves=Save._meta.db_table,
        ids=", ".join(["%s"] * len(saves)),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [s.pk for s in saves])
        ends = cursor.fetchall()
    years = set()
    for first, last in ends:
        for stamp in (first, last):
            moment = parse_timestamp(stamp or "")
            if moment is not None:
                years.add(moment.astimezone(UTC).year)
    return len(years) > 1
