"""Poison rows: a canonical row that passed a door (or was written around every door) but that
the fold cannot fold is quarantined, never fatal (issue 14).

The cycle and rebuild ask the same two questions of every row, so rebuild = incremental holds
for the quarantine too: `defect_of` (the cheap checks: the columns the fold and the projection
tables need, of the types they need) and, for a row that passes them, whether folding it
raises. Either way the row is recorded as a ProjectionProblem with its reason, skipped, and
the watermark moves past it; every other row (of that owner and of every other) still folds.

The intent is checked only for its shape (a JSON object's braces), not decoded: decoding every
intent would cost the fold a parse per row, and the write doors already decode and check them
(memory.engine.intents). A row whose intent is not an object cannot be a memory omnia wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection

from memory.active_save import scoped_cursor
from memory.engine.projections.rows import FoldRow
from memory.models import ProjectionProblem, WorldObject

TABLE = "buffer_entries"
# A problem that names no row: the projection cycle itself failed on this save (a helper
# raised on its data). Recorded by the every-save cycle, cleared by its next good pass; the
# save's page and the overview say it, /healthz counts it (issue 29: one save's crash had
# stopped the cycle for all, and nothing said which).
CYCLE_TABLE = "upkeep"
CYCLE_REF = "projection cycle"


@dataclass(frozen=True)
class Problem:
    row: FoldRow
    reason: str


def _optional_text(value: object) -> bool:
    return value is None or value.__class__ is str


def defect_of(row: FoldRow) -> str | None:
    """Why the fold cannot take this row, or None. One expression for the common case: this
    runs once per row folded."""
    row_id, owner, ts, intent = row.id, row.owner_id, row.timestamp, row.intent_json
    if (
        row_id.__class__ is str
        and row_id
        and owner.__class__ is str
        and owner
        and ts.__class__ is str
        and intent.__class__ is str
        and intent[:1] == "{"
        and intent[-1:] == "}"
        and _optional_text(row.conversation_id)
        and _optional_text(row.location_id)
    ):
        return None
    return _why(row)


def _why(row: FoldRow) -> str | None:
    if row.id is None:
        return "the row has no id (its primary key is NULL)"
    if row.id.__class__ is not str or not row.id:
        return "the row's id is not a non-empty text"
    if row.owner_id.__class__ is not str or not row.owner_id:
        return "owner_id is not a non-empty text"
    if row.timestamp.__class__ is not str:
        return "timestamp is not text"
    if row.intent_json.__class__ is not str:
        return "intent_json is not text"
    text = row.intent_json.strip()
    if text[:1] != "{" or text[-1:] != "}":
        return "intent_json is not a JSON object"
    if not _optional_text(row.conversation_id):
        return "conversation_id is not text"
    if not _optional_text(row.location_id):
        return "location_id is not text"
    return None


def fold_failure(exc: BaseException) -> str:
    """The reason recorded for a row whose fold raised: the error's class and its first line,
    bounded (a RecursionError's message is short; a hostile value's repr may not be)."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"the fold raised {exc.__class__.__name__}: {message}"[:300]


def sift(rows: Sequence[FoldRow]) -> tuple[Sequence[FoldRow], list[Problem]]:
    """The rows the fold can take, and the problems among them (fold order kept).

    The common case (every row sound) is one comprehension over tuple positions, the same
    test as defect_of on unpacked rows, and hands the rows back as they came: this runs over every row a
    rebuild folds (a million rows cost about as much as copying the list a few times)."""
    text = str
    suspects = [
        row_id
        for row_id, owner, ts, loc, conv, intent, _created, _shard, _key, _moment in rows
        if not (
            row_id.__class__ is text
            and row_id
            and owner.__class__ is text
            and owner
            and ts.__class__ is text
            and intent.__class__ is text
            and intent[:1] == "{"
            and intent[-1:] == "}"
            and (loc is None or loc.__class__ is text)
            and (conv is None or conv.__class__ is text)
        )
    ]
    if not suspects:
        return rows, []
    good: list[FoldRow] = []
    bad: list[Problem] = []
    for row in rows:
        reason = defect_of(row)
        if reason is None:
            good.append(row)
        else:
            bad.append(Problem(row, reason))
    return good, bad


def ref_of(row: FoldRow, rowid: int | None = None) -> str:
    """How a problem names its row: the id, or on SQLite "rowid N" when the id is NULL."""
    if row.id.__class__ is str and row.id:
        return row.id
    if rowid is not None:
        return f"rowid {rowid}"
    return f"{row.id!r} at created_at {row.created_at} in shard {row.shard}"


def _rowids(problems: Sequence[Problem]) -> dict[int, int]:
    """SQLite keeps a rowid beside a NULL id: the one handle an operator can delete it by."""
    found: dict[int, int] = {}
    if connection.vendor != "sqlite":
        return found
    with scoped_cursor() as cursor:
        for index, p in enumerate(problems):
            if p.row.id.__class__ is str and p.row.id:
                continue
            cursor.execute(
                f"SELECT rowid FROM {TABLE} WHERE game_save_id = %(save)s AND id IS %s "
                "AND owner_id IS %s AND created_at IS %s AND shard IS %s ORDER BY rowid LIMIT 1",
                [p.row.id, p.row.owner_id, p.row.created_at, p.row.shard],
            )
            hit = cursor.fetchone()
            if hit is not None:
                found[index] = hit[0]
    return found


def as_models(problems: Sequence[Problem]) -> list[ProjectionProblem]:
    rowids = _rowids(problems)
    owners = sorted({p.row.owner_id for p in problems if p.row.owner_id.__class__ is str})
    worlds = dict(WorldObject.objects.filter(id__in=owners).values_list("id", "world_id"))
    return [
        ProjectionProblem(
            table_name=TABLE,
            row_ref=ref_of(p.row, rowids.get(index)),
            row_id=p.row.id if p.row.id.__class__ is str else None,
            world_id=worlds.get(p.row.owner_id),
            owner_id=p.row.owner_id if p.row.owner_id.__class__ is str else None,
            shard=p.row.shard if p.row.shard.__class__ is int else None,
            created_at=p.row.created_at if p.row.created_at.__class__ is int else None,
            reason=p.reason,
        )
        for index, p in enumerate(problems)
    ]


def record(problems: Sequence[Problem]) -> int:
    """Store these problems; one already recorded keeps its first sighting."""
    if not problems:
        return 0
    ProjectionProblem.objects.bulk_create(as_models(problems), ignore_conflicts=True)
    return len(problems)


def replace_all(problems: Iterable[Problem]) -> int:
    """Rebuild's answer: exactly these problems are stored (first sightings kept)."""
    fresh = {m.row_ref: m for m in as_models(list(problems))}
    ProjectionProblem.objects.filter(table_name=TABLE).exclude(row_ref__in=list(fresh)).delete()
    ProjectionProblem.objects.bulk_create(list(fresh.values()), ignore_conflicts=True)
    return len(fresh)


def problem_count() -> int:
    return ProjectionProblem.objects.count()


def cycle_failed(exc: BaseException) -> str:
    """Record, in the active save, that its projection cycle raised `exc`; the reason."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    reason = f"the projection cycle failed: {exc.__class__.__name__}: {message}"[:300]
    ProjectionProblem.objects.update_or_create(
        table_name=CYCLE_TABLE, row_ref=CYCLE_REF, defaults={"reason": reason}
    )
    return reason


def cycle_passed() -> None:
    """The active save's cycle ran through: a failure recorded before is over."""
    failed = ProjectionProblem.objects.filter(table_name=CYCLE_TABLE)
    if failed.exists():  # a read first: a good cycle writes nothing here
        failed.delete()


def cycle_failure() -> str:
    """Why the active save's last cycle failed, or "" when it did not."""
    return (
        ProjectionProblem.objects.filter(table_name=CYCLE_TABLE)
        .values_list("reason", flat=True)
        .first()
        or ""
    )
