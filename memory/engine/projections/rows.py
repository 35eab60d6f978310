"""The canonical row as the fold sees it, and the two ways the fold reads canonical rows:
forward from a shard's watermark (the cycle) and every row owner by owner (rebuild, verify).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from memory.active_save import scoped_rows
from memory.engine.clock import keyed

CYCLE_BATCH = 2000
REBUILD_BATCH = 10000
# Fewer rows than this are folded by one process: a second one costs more to start.
SHARED_ROWS = 50_000


class FoldRow(NamedTuple):
    id: str
    owner_id: str
    timestamp: str
    location_id: str | None
    conversation_id: str | None
    intent_json: str
    created_at: int
    shard: int
    # time_key(timestamp) and the instant it names (moment_of_key), computed once where the
    # row is read: the session fold and the episode walk both compare through the key, the
    # walk measures gaps with the moment. Both None when a caller builds a row by hand.
    key: str | None = None
    moment: datetime | None = None


FOLD_COLUMNS = (
    "id, owner_id, timestamp, location_id, conversation_id, intent_json, created_at, shard"
)


_new_tuple = tuple.__new__


_parse_head = datetime.fromisoformat


def _fold_row(r: tuple) -> FoldRow:
    # A timestamp that is not text (a poison row) gets no key: the quarantine decides on it.
    # tuple.__new__, not FoldRow(...): the generated __new__ is a Python call per row. The
    # common timestamp (toISOString()'s "2026-07-06T12:00:00.000Z") is keyed here as
    # clock.keyed keys it, without that call: this runs for every row a rebuild folds.
    ts = r[2]
    if ts.__class__ is str and len(ts) == 24 and ts[23] == "Z" and ts[19] == "." and ts[10] == "T":
        try:
            moment = _parse_head(ts[:23])
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is None:
            return _new_tuple(FoldRow, (*r, ts[:23] + "000Z", moment))
    return _new_tuple(FoldRow, (*r, *keyed(ts)) if ts.__class__ is str else (*r, None, None))


def mark_id(row_id: object) -> str:
    """A row's id as a watermark or keyset position. A NULL id (SQLite lets a TEXT PRIMARY KEY
    be NULL) sorts before every id of its created_at, so "" resumes right after it."""
    return row_id if row_id.__class__ is str else ""


def rows_after(shard: int, created_at: int, row_id: str, limit: int) -> list[FoldRow]:
    """Rows of one shard strictly past a watermark, in fold order: an idx_buffer_shard_fold seek."""
    # A row-value comparison, not "a > x OR (a = x AND b > y)": both SQLite and PostgreSQL
    # turn it into an index range start, where the OR form filters the whole shard.
    sql = (
        f"SELECT {FOLD_COLUMNS} FROM buffer_entries "
        "WHERE game_save_id = %(save)s AND shard = %s AND (created_at, id) > (%s, %s) "
        "ORDER BY game_save_id, shard, created_at, id LIMIT %s"
    )
    params = (shard, created_at, row_id, limit)
    return [_fold_row(r) for r in scoped_rows(sql, params)]


def iter_rows_owner_major(
    batch: int = REBUILD_BATCH, owners: tuple[str | None, str | None] = (None, None)
) -> Iterator[FoldRow]:
    """Every row (of the owners from `owners[0]` up to, not including, `owners[1]`: a part
    of a rebuild's rows), owner by owner, each owner's rows in (created_at, id) order.

    Keyset batches over idx_buffer_owner_fold: memory stays flat however many rows the store
    holds, and a session's rows (which never span owners) still arrive in fold order.
    """
    low, high = owners
    bounds, bound_params = "", []
    if high is not None:
        bounds, bound_params = " AND owner_id < %s", [high]
    after: tuple[str, int, str] | None = None
    while True:
        if after is None:
            start = "" if low is None else " AND owner_id >= %s"
            sql = (
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries WHERE game_save_id = %(save)s"
                f"{start}{bounds} ORDER BY game_save_id, owner_id, created_at, id LIMIT %s"
            )
            params: tuple = (*([] if low is None else [low]), *bound_params, batch)
        else:
            owner, created_at, row_id = after
            sql = (
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries "
                "WHERE game_save_id = %(save)s AND (owner_id, created_at, id) > (%s, %s, %s)"
                f"{bounds} ORDER BY game_save_id, owner_id, created_at, id LIMIT %s"
            )
            params = (owner, created_at, row_id, *bound_params, batch)
        rows = scoped_rows(sql, params)
        yield from map(_fold_row, rows)
        if len(rows) < batch:
            return
        last = rows[-1]
        after = (last[1], last[6], mark_id(last[0]))


def middle_owner(helper_share: float = 0.5) -> str | None:
    """The owner at which a helper process takes over the rest of the owners (by rows, about
    `helper_share` of them), or None when there are too few rows to share out."""
    ((total,),) = scoped_rows(
        "SELECT COUNT(*) FROM buffer_entries WHERE game_save_id = %(save)s", ()
    )
    if total < SHARED_ROWS:
        return None
    found = scoped_rows(
        "SELECT owner_id FROM buffer_entries WHERE game_save_id = %(save)s "
        "ORDER BY game_save_id, owner_id LIMIT 1 OFFSET %s",
        (int(total * (1 - helper_share)),),
    )
    return found[0][0] if found else None


_OWNER = itemgetter(1)


def by_owner(rows: Iterable[FoldRow]) -> Iterator[tuple[str, list[FoldRow]]]:
    """Runs of rows with the same owner_id, in order (groupby: the grouping loop runs in C)."""
    for owner, group in groupby(rows, _OWNER):
        yield owner, list(group)


# A stamp in toISOString()'s form, "2026-07-06T12:00:00.000Z" (the shape clock.time_key keys
# without a parse): among such stamps, their order as text is the order of their keys.
_ISO_SHAPED = (
    "length(timestamp) = 24 AND substr(timestamp, 11, 1) = 'T' "
    "AND substr(timestamp, 20, 1) = '.' AND substr(timestamp, 24, 1) = 'Z'"
)


def owner_rows(owner_id: str, until: str | None = None) -> list[FoldRow]:
    """One owner's rows in fold order (idx_buffer_owner_fold): a refold of that owner.

    `until` (a clock.time_key): read only the rows that may be at or before it, which the
    caller keeps by key: the rows in toISOString()'s form whose text is at most the key's
    (their text orders as their keys do), and every row in another form (an offset, no
    milliseconds, no time at all), whose text says nothing of its key. A busy viewer's digest
    at a moment halfway through its 100,000 rows read all of them: 0.7 s of a 1.1 s page."""
    sql = (
        f"SELECT {FOLD_COLUMNS} FROM buffer_entries WHERE game_save_id = %(save)s AND owner_id = %s"
    )
    params: tuple = (owner_id,)
    bound = _text_bound(until) if until is not None else None
    if bound is not None:
        sql += f" AND (timestamp <= %s OR NOT ({_ISO_SHAPED}))"
        params = (owner_id, bound)
    sql += " ORDER BY game_save_id, owner_id, created_at, id"
    return [_fold_row(r) for r in scoped_rows(sql, params)]


def _text_bound(key: str) -> str | None:
    """The greatest toISOString() stamp whose key is at most `key` ("…12:00:00.123456Z" ->
    "…12:00:00.123Z"), None when `key` names no instant (then every row is read)."""
    if len(key) == 27 and key[10] == "T" and key[19] == "." and key[26] == "Z":
        return key[:23] + "Z"
    return None
