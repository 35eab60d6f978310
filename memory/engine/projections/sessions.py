"""The session projection: one row per (owner, session key), folded from canonical rows.

Exact terms only (seed 003): first_at (min world time), last_at (max), memory_count and
dialogue_count (historical sums: a retracted row still happened and still counts),
last_member_id (the last row in fold order), plus a content hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from memory.active_save import scoped_cursor
from memory.engine.clock import UNTIMED, time_key
from memory.engine.projections.rows import FoldRow
from memory.models import MemorySession

# Projection rows are looked up by (owner, session_key) through the unique index, a bounded
# number of pairs per statement so the statement stays an index probe per pair.
LOOKUP_CHUNK = 200


# A conversation id that could be read as a scene's key (or as an escaped one) is escaped, so
# the two kinds of session never share a key: "scene:cellar" the conversation is not the
# cellar's scene. Every other conversation id is its own key.
_KEY_PREFIXES = ("scene:", "conversation:")


def session_key_of(conversation_id: str | None, location_id: str | None) -> str:
    if conversation_id:
        if conversation_id.startswith(_KEY_PREFIXES):
            return f"conversation:{conversation_id}"
        return conversation_id
    return f"scene:{location_id or ''}"


def is_dialogue(intent_json: str) -> bool:
    # Only the intent's type matters to the fold. Most rows are not dialogue and say so
    # without a parse: the literal cannot be absent unless it is \u-escaped.
    if '"dialogue"' not in intent_json and "\\u" not in intent_json:
        return False
    try:
        intent = json.loads(intent_json)
    except ValueError:
        return False  # undeliverable: still a memory, never a dialogue
    return isinstance(intent, dict) and intent.get("type") == "dialogue"


class SessionState(NamedTuple):
    owner_id: str
    session_key: str
    first_at: str
    last_at: str
    memory_count: int
    dialogue_count: int
    last_member_id: str
    # Derived from first_at/last_at, never stored: recomputed when a row is loaded.
    first_key: str
    last_key: str


SESSION_FIELDS = ("first_at", "last_at", "memory_count", "dialogue_count", "last_member_id")


def fold_session(state: SessionState | None, row: FoldRow) -> SessionState:
    """Fold one canonical row into its session. Callers feed rows in (created_at, id) order."""
    key = row.key or time_key(row.timestamp)
    spoken = 1 if is_dialogue(row.intent_json) else 0
    if state is None:
        return SessionState(
            row.owner_id,
            session_key_of(row.conversation_id, row.location_id),
            row.timestamp,
            row.timestamp,
            1,
            spoken,
            row.id,
            key,
            key,
        )
    # A time that names no instant (an imported row marked untimed) makes the row a member,
    # never a bound; a session that had only such rows takes its first real time whole.
    if key.startswith("~"):
        first_at, first_key = state.first_at, state.first_key
        last_at, last_key = state.last_at, state.last_key
    elif state.last_key.startswith("~"):
        first_at, last_at, first_key, last_key = row.timestamp, row.timestamp, key, key
    else:
        first_at, first_key = (
            (row.timestamp, key) if key < state.first_key else (state.first_at, state.first_key)
        )
        last_at, last_key = (
            (row.timestamp, key) if key > state.last_key else (state.last_at, state.last_key)
        )
    return SessionState(
        state.owner_id,
        state.session_key,
        first_at,
        last_at,
        state.memory_count + 1,
        state.dialogue_count + spoken,
        row.id,
        first_key,
        last_key,
    )


def session_hash(state: SessionState | MemorySession) -> str:
    """sha256 over a canonical encoding of the row's identity and exact terms."""
    payload = [
        state.owner_id,
        state.session_key,
        state.first_at,
        state.last_at,
        int(state.memory_count),
        int(state.dialogue_count),
        state.last_member_id,
    ]
    encoded = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def state_of(row: MemorySession | Sequence[Any]) -> SessionState:
    """A stored session row back as fold state (the inverse of writing it)."""
    if isinstance(row, MemorySession):
        values = (
            row.owner_id,
            row.session_key,
            row.first_at,
            row.last_at,
            row.memory_count,
            row.dialogue_count,
            row.last_member_id,
        )
    else:
        values = tuple(row[:7])
    owner_id, key, first_at, last_at, memory_count, dialogue_count, last_member_id = values
    return SessionState(
        owner_id,
        key,
        first_at,
        last_at,
        int(memory_count),
        int(dialogue_count),
        last_member_id,
        time_key(first_at),
        time_key(last_at),
    )


SESSION_COLUMNS = (
    "owner_id",
    "session_key",
    "first_at",
    "last_at",
    "memory_count",
    "dialogue_count",
    "last_member_id",
    "content_hash",
    "last_key",
)


def session_values(state: SessionState) -> tuple:
    return (
        state.owner_id,
        state.session_key,
        state.first_at,
        state.last_at,
        state.memory_count,
        state.dialogue_count,
        state.last_member_id,
        session_hash(state),
        state.last_key,
    )


# Raw SQL, not bulk_create(update_conflicts=True): that is 2.4-4.4x slower on SQLite (bench_upserts)
def upsert_sessions(states: Sequence[SessionState]) -> int:
    if not states:
        return 0
    table = MemorySession._meta.db_table
    columns = ", ".join(SESSION_COLUMNS)
    marks = ", ".join(["%s"] * len(SESSION_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in SESSION_COLUMNS[2:])
    sql = (
        f"INSERT INTO {table} (game_save_id, {columns}) VALUES (%(save)s, {marks}) "
        f"ON CONFLICT (game_save_id, owner_id, session_key) DO UPDATE SET {updates}"
    )
    with scoped_cursor() as cursor:
        cursor.executemany(sql, [session_values(s) for s in states])
    return len(states)


def insert_sessions(states: Sequence[SessionState]) -> int:
    if not states:
        return 0
    with scoped_cursor() as cursor:
        cursor.insert_rows(
            MemorySession._meta.db_table, SESSION_COLUMNS, [session_values(s) for s in states]
        )
    return len(states)


def load_sessions(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], SessionState]:
    """Stored sessions for exactly these (owner, key) pairs, through the unique index."""
    found: dict[tuple[str, str], SessionState] = {}
    pending = sorted(set(pairs))
    for start in range(0, len(pending), LOOKUP_CHUNK):
        chunk = pending[start : start + LOOKUP_CHUNK]
        # Fixed SQL, not ORM Q objects (compiling 200 Q pairs cost more CPU than the query: a
        # quarter of a 100k-row backlog cycle). The pairs are a VALUES table joined to the
        # unique index, one seek each: "game_save_id = ? AND (pair OR pair …)" made SQLite
        # walk every session of the save, so the cycle grew with the store.
        pairs_sql = ", ".join(["(%s, %s)"] * len(chunk))
        with scoped_cursor() as cursor:
            cursor.execute(
                f"SELECT {', '.join(f's.{c}' for c in SESSION_COLUMNS[:7])} "
                f"FROM {MemorySession._meta.db_table} s, (VALUES {pairs_sql}) wanted "
                "WHERE s.game_save_id = %(save)s AND s.owner_id = wanted.column1 "
                "AND s.session_key = wanted.column2",
                [value for pair in chunk for value in pair],
            )
            for row in cursor.fetchall():
                found[(row[0], row[1])] = state_of(row)
    return found


def fold_owner(rows: Sequence[FoldRow]) -> dict[str, SessionState]:
    """fold_session over one owner's rows (fold order), every session at once.

    The same terms as folding row by row (the property tests hold rebuild to the cycle), with
    each session's terms in a mutable list until the end: a rebuild makes one state per
    session instead of one per row, which is most of what it spends beyond reading. The loop
    runs once per row a rebuild folds: rows are unpacked (no attribute lookups), a row of the
    previous row's session reuses its key and terms, and "untimed" is a comparison, not a call.
    """
    terms: dict[
        str, list
    ] = {}  # session key -> [first_at, last_at, count, spoken, last id, first_key, last_key]
    t: list | None = None
    conv_seen = loc_seen = None
    for row_id, _owner, ts, loc, conv, j, _created, _shard, key, _moment in rows:
        if t is None or conv != conv_seen or loc != loc_seen:
            conv_seen, loc_seen = conv, loc
            skey = session_key_of(conv, loc)
            t = terms.get(skey)
            if t is None:
                key = key or time_key(ts)
                spoken = 1 if ('"dialogue"' in j or "\\u" in j) and is_dialogue(j) else 0
                t = terms[skey] = [ts, ts, 1, spoken, row_id, key, key]
                continue
        if key is None:
            key = time_key(ts)
        if key >= UNTIMED:  # untimed: a member, never a bound (as in fold_session)
            pass
        elif t[6] >= UNTIMED:
            t[0], t[1], t[5], t[6] = ts, ts, key, key
        else:
            if key < t[5]:
                t[0], t[5] = ts, key
            if key > t[6]:
                t[1], t[6] = ts, key
        t[2] += 1
        if '"dialogue"' in j or "\\u" in j:
            t[3] += is_dialogue(j)
        t[4] = row_id
    owner_id = rows[0].owner_id if rows else ""
    return {skey: SessionState(owner_id, skey, *t) for skey, t in terms.items()}
