"""The buffer merge: two buffers streamed side by side in one key order, so only the
differences are held, never both buffers. The order is the database's in a byte collation,
which is Python's string order, so the merge and the database agree on every backend."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import replace

from django.db import connection
from django.db.models.functions import Collate

from memory.engine.buffer.rendered import BUFFER_FIELDS, render_entry
from memory.engine.clock import time_key
from memory.engine.compare.budget import Budget
from memory.engine.compare.moments import Cast, Moment, moment_of, same_moment
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


_WHOLE = Budget()
# A row waits this many rows of its own side for its other-era twin (a replay moves a moment
# a few rows, never thousands); past that it is only in its save.
WINDOW = 64
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


def _line(row: tuple, viewer: Viewer, budget: Budget = _WHOLE) -> Line:
    r = render_entry(BufferEntry(**dict(zip(_FIELDS, row, strict=True))), viewer)
    return Line(
        id=r.id,
        timestamp=r.timestamp,
        line=budget.cut(r.line),
        undeliverable=budget.cut(r.undeliverable),
        retracted=r.retracted,
    )


_CLOCK = re.compile(r"^\[\d{1,2}:\d{2}:\d{2} [AP]M\] ")


def _read(line: Line) -> str:
    """A line's words as a person reads them beside the time the page shows anyway: the
    first era's clock prefix off, the first letter in either case (a moment told at another
    time, or by the other era, reads the same when these agree)."""
    text = _CLOCK.sub("", line.text)
    return text[:1].casefold() + text[1:]


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
            "two viewers never share an entry id",
        )
    shared = _shared_ids(a, b, owner_a, owner_b)
    if shared:
        return Matching.BY_ID, f"{shared} entry id(s) appear in both saves"
    return Matching.BY_CONTENT, "no entry id appears in both saves"


def _chronological(line: Line) -> tuple[str, str]:
    return (time_key(line.timestamp), line.id)


class _Merge:
    """One merge's state: the page of differences it keeps, the counts of all of them, and
    the rows still waiting for a twin told in other words (meaning pairing)."""

    def __init__(self, diff: BufferDiff, readers: tuple[Viewer, Viewer], budget: Budget):
        self.diff, self.readers, self.budget = diff, readers, budget
        self.same_reader = readers[0].id == readers[1].id and dict(readers[0].aliases) == dict(
            readers[1].aliases
        )
        self.index = 0  # differences met so far
        self.waiting: tuple[deque, deque] = (deque(), deque())

    def _keep(self) -> bool:
        kept = self.budget.keeps(self.index)
        self.index += 1
        return kept

    def only(self, side: int, row: tuple) -> None:
        if side == 0:
            self.diff.only_a_count += 1
            if self._keep():
                self.diff.only_a.append(_line(row, self.readers[0], self.budget))
        else:
            self.diff.only_b_count += 1
            if self._keep():
                self.diff.only_b.append(_line(row, self.readers[1], self.budget))

    def pair(self, row_a: tuple, row_b: tuple, *, by_meaning: bool = False) -> None:
        """Two rows of one moment. Pairs keep time order: a row still waiting when its two
        neighbours pair could pair only across them."""
        if not by_meaning:
            self.flush()
        self.diff.by_meaning += by_meaning
        if self.same_reader and _raw(row_a) == _raw(row_b):
            # A line is a pure function of its row and its reader: the same row read by the
            # same reader needs no rendering to be known the same (most of a replay's rows).
            self.diff.same += 1
            return
        line_a, line_b = _line(row_a, self.readers[0]), _line(row_b, self.readers[1])
        if line_a.text == line_b.text or (by_meaning and _read(line_a) == _read(line_b)):
            self.diff.same += 1
            return
        self.diff.changed_count += 1
        if self._keep():
            cut_a = replace(line_a, line=self.budget.cut(line_a.line))
            cut_b = replace(line_b, line=self.budget.cut(line_b.line))
            self.diff.changed.append(ChangedLine(a=cut_a, b=cut_b))

    def unmatched(self, side: int, row: tuple, moment: Moment | None) -> None:
        """A row no row of the other save has at its time and intent: paired with a waiting
        row of the other save that tells the same moment, else it waits for one."""
        other = self.waiting[1 - side]
        best, at = 0.0, None
        for i, (_, waiting) in enumerate(other):
            score = same_moment(moment, waiting) if side == 0 else same_moment(waiting, moment)
            if score > best:
                best, at = score, i
        if at is None:
            mine = self.waiting[side]
            mine.append((row, moment))
            if len(mine) > WINDOW:
                self.only(side, mine.popleft()[0])
            return
        # What waited before the twin, and this side's older rows, can pair only across it.
        for _ in range(at):
            self.only(1 - side, other.popleft()[0])
        while self.waiting[side]:
            self.only(side, self.waiting[side].popleft()[0])
        twin = other.popleft()[0]
        pair = (row, twin) if side == 0 else (twin, row)
        self.pair(*pair, by_meaning=True)

    def flush(self) -> None:
        for side in (0, 1):
            while self.waiting[side]:
                self.only(side, self.waiting[side].popleft()[0])


def _count(save: Save, owner_id: str) -> int:
    return BufferEntry.objects.in_save(save).filter(owner_id=owner_id).count()


def diff_buffers(
    a: Save,
    viewer_a: Viewer,
    b: Save,
    viewer_b: Viewer,
    *,
    matching: tuple[Matching, str],
    cast: Cast | None = None,
    budget: Budget = _WHOLE,
) -> BufferDiff:
    """Merge the two buffers in key order; keep only what differs (one page of it under a
    budget, then put it in time order). Matched by content, a row left alone at its time and
    intent is paired by meaning (`moments`) with a nearby row of the other save, people
    named through `cast` (the same person under two ids in two saves)."""
    how, why = matching
    diff = BufferDiff(matching=how, why=why)
    diff.rows_a, diff.rows_b = _count(a, viewer_a.id), _count(b, viewer_b.id)
    cast = cast or Cast.within_one_save()
    merge = _Merge(diff, (viewer_a, viewer_b), budget)
    by_meaning = how is Matching.BY_CONTENT
    intent = _AT["intent_json"]

    def alone(side: int, row: tuple) -> None:
        if not by_meaning:
            merge.only(side, row)
            return
        who = cast.who_a if side == 0 else cast.who_b
        merge.unmatched(side, row, moment_of(row[intent], who, cast.words))

    rows_a, rows_b = _stream(a, viewer_a.id, how), _stream(b, viewer_b.id, how)
    row_a, row_b = next(rows_a, None), next(rows_b, None)
    read = 0
    while row_a is not None or row_b is not None:
        read += 1
        if read % 256 == 0 and budget.spent():
            diff.complete = False
            break
        key_a = _key(row_a, how) if row_a is not None else None
        key_b = _key(row_b, how) if row_b is not None else None
        if key_b is None or (key_a is not None and key_a < key_b):
            alone(0, row_a)
            diff.read_a += 1
            row_a = next(rows_a, None)
        elif key_a is None or key_b < key_a:
            alone(1, row_b)
            diff.read_b += 1
            row_b = next(rows_b, None)
        else:
            merge.pair(row_a, row_b)
            diff.read_a += 1
            diff.read_b += 1
            row_a, row_b = next(rows_a, None), next(rows_b, None)
    merge.flush()
    diff.only_a.sort(key=_chronological)
    diff.only_b.sort(key=_chronological)
    diff.changed.sort(key=lambda c: _chronological(c.b))
    diff.shown_from = budget.skip
    diff.close()
    return diff
