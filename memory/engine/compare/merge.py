"""The buffer merge: two buffers streamed side by side in one key order, so only the
differences are held, never both buffers. The order is the database's in a byte collation,
which is Python's string order, so the merge and the database agree on every backend."""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection
from django.db.models.functions import Collate

from memory.engine.buffer.rendered import BUFFER_FIELDS, render_entry
from memory.engine.clock import time_key
from memory.engine.compare.results import BufferDiff, ChangedLine, Line, Matching
from memory.engine.knowledge import Viewer
from memory.models import BufferEntry, Save


def _collation() -> str:
    # Byte order of UTF-8 text is code-point order, which is how Python compares strings.
    return "C" if connection.vendor == "postgresql" else "BINARY"


# Rows travel as tuples of these fields (a model instance per row cost most of a 40,000-row
# merge); a row becomes a BufferEntry only when it is rendered.
_FIELDS = BUFFER_FIELDS


_AT = {name: i for i, name in enumerate(_FIELDS)}


_RAW = tuple(_AT[f] for f in ("timestamp", "intent_json", "outcome_json", "untimed"))


def _stream(save: Save, owner_id: str, matching: Matching) -> Iterator[tuple]:
    c = _collation()
    rows = BufferEntry.objects.in_save(save).filter(owner_id=owner_id)
    if matching is Matching.BY_ID:
        order = [Collate("id", c)]
    else:
        # Rows with the same time and intent pair up in write order.
        order = [Collate("timestamp", c), Collate("intent_json", c), "created_at", Collate("id", c)]
    return rows.order_by(*order).values_list(*_FIELDS).iterator(chunk_size=2000)


def _key(row: tuple, matching: Matching) -> tuple[str, ...]:
    if matching is Matching.BY_ID:
        return (row[_AT["id"]],)
    return (row[_AT["timestamp"]], row[_AT["intent_json"]])


def _line(row: tuple, viewer: Viewer) -> Line:
    r = render_entry(BufferEntry(**dict(zip(_FIELDS, row, strict=True))), viewer)
    return Line(
        id=r.id,
        timestamp=r.timestamp,
        line=r.line,
        undeliverable=r.undeliverable,
        retracted=r.retracted,
    )


def _raw(row: tuple) -> tuple:
    """Everything of a row its rendering reads (beside its reader)."""
    return (*(row[i] for i in _RAW), row[_AT["retracted_at"]] is None)


def _shared_ids(a: Save, b: Save, owner_a: str, owner_b: str) -> int:
    ids_a = BufferEntry.objects.in_save(a).filter(owner_id=owner_a).values("id")
    return BufferEntry.objects.in_save(b).filter(owner_id=owner_b, id__in=ids_a).count()


def matching_of(a: Save, b: Save, owner_a: str, owner_b: str) -> tuple[Matching, str]:
    if a.pk == b.pk:
        return (
            Matching.BY_CONTENT,
            "two viewers never share an entry id: matched by time and intent",
        )
    shared = _shared_ids(a, b, owner_a, owner_b)
    if shared:
        return Matching.BY_ID, f"{shared} entry id(s) appear in both saves: ids are stable"
    return Matching.BY_CONTENT, "no entry id appears in both saves: matched by time and intent"


def _chronological(line: Line) -> tuple[str, str]:
    return (time_key(line.timestamp), line.id)


def diff_buffers(
    a: Save, viewer_a: Viewer, b: Save, viewer_b: Viewer, *, matching: tuple[Matching, str]
) -> BufferDiff:
    """Merge the two buffers in key order; keep only what differs (then put it in time order)."""
    how, why = matching
    diff = BufferDiff(matching=how, why=why)
    same_reader = viewer_a.id == viewer_b.id and dict(viewer_a.aliases) == dict(viewer_b.aliases)
    rows_a, rows_b = _stream(a, viewer_a.id, how), _stream(b, viewer_b.id, how)
    row_a, row_b = next(rows_a, None), next(rows_b, None)
    while row_a is not None or row_b is not None:
        key_a = _key(row_a, how) if row_a is not None else None
        key_b = _key(row_b, how) if row_b is not None else None
        if key_b is None or (key_a is not None and key_a < key_b):
            diff.only_a.append(_line(row_a, viewer_a))
            row_a = next(rows_a, None)
        elif key_a is None or key_b < key_a:
            diff.only_b.append(_line(row_b, viewer_b))
            row_b = next(rows_b, None)
        elif same_reader and _raw(row_a) == _raw(row_b):
            # A line is a pure function of its row and its reader: the same row read by the
            # same reader needs no rendering to be known the same (most of a replay's rows).
            diff.same += 1
            row_a, row_b = next(rows_a, None), next(rows_b, None)
        else:
            line_a, line_b = _line(row_a, viewer_a), _line(row_b, viewer_b)
            if line_a.text != line_b.text:
                diff.changed.append(ChangedLine(a=line_a, b=line_b))
            else:
                diff.same += 1
            row_a, row_b = next(rows_a, None), next(rows_b, None)
    diff.only_a.sort(key=_chronological)
    diff.only_b.sort(key=_chronological)
    diff.changed.sort(key=lambda c: _chronological(c.b))
    return diff
