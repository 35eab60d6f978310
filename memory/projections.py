"""Memory projections: derived rows folded from the canonical memory rows (seed 003).

A projection is a row that is a pure function of the canonical rows, rebuildable from them
alone. Today the closed registry names one, `session`: one row per (owner, session key) with
exact terms only — first_at (min world time), last_at (max), memory_count and dialogue_count
(historical sums: a retracted row still happened and still counts), last_member_id (the last
row in fold order) — plus a content hash. No author and no stability: a projection row is not
a memory, so nothing can fold it back in as input.

One fold, two callers. `run_cycle` folds the rows written past each shard's watermark
(forward-only; nothing is stamped on a canonical row; cost proportional to what was written),
and `rebuild` folds every row with the same function. That is why rebuild = incremental is
structural; `verify` proves it on the fields and on the hash without writing.

Every answer reports `rows_visited`: the rows its queries actually returned (canonical rows
plus projection/episode rows), never an estimate. The watermark row itself is bookkeeping and
is not counted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memory import doors, episodes
from memory.models import Episode, MemorySession, ProjectionShard, WorldObject
from memory.rows import ensure_shards, shard_count

CYCLE_BATCH = 2000
REBUILD_BATCH = 10000
# Projection rows are looked up by (owner, session_key) through the unique index, a bounded
# number of pairs per statement so the statement stays an index probe per pair.
LOOKUP_CHUNK = 200


# --- the canonical row as the fold sees it --------------------------------------------------


class FoldRow(NamedTuple):
    id: str
    owner_id: str
    timestamp: str
    location_id: str | None
    conversation_id: str | None
    intent_json: str
    created_at: int
    shard: int


FOLD_COLUMNS = (
    "id, owner_id, timestamp, location_id, conversation_id, intent_json, created_at, shard"
)


def session_key_of(conversation_id: str | None, location_id: str | None) -> str:
    if conversation_id:
        return conversation_id
    return f"scene:{location_id or ''}"


def time_key(timestamp: str) -> str:
    """A total-order key for a world timestamp: UTC, microseconds, lexicographic = chronological.

    Stored timestamps are strings in whatever ISO form the writer used; comparing them raw
    would order "12:00:00Z" after "12:00:00.500Z". Unparseable stamps sort after every real
    one ("~" > digits), so min/max stay a total order and the fold stays deterministic.
    """
    # toISOString() form, by far the common case: no parse needed.
    if (
        len(timestamp) == 24
        and timestamp[23] == "Z"
        and timestamp[19] == "."
        and timestamp[10] == "T"
    ):
        return timestamp[:23] + "000Z"
    try:
        parsed = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return "~" + str(timestamp)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    parsed = parsed.astimezone(UTC)
    return f"{parsed:%Y-%m-%dT%H:%M:%S}.{parsed.microsecond:06d}Z"


def key_datetime(key: str) -> datetime | None:
    if key.startswith("~"):
        return None
    try:
        return datetime.strptime(key, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None  # toISOString-shaped but not a real time ("T25:00"): no gap evidence


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


# --- the session fold ------------------------------------------------------------------------


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
    key = time_key(row.timestamp)
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


# --- the closed registry -----------------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """A projection is a name, a fold and a door, registered together or not at all."""

    name: str
    fold: Callable[..., Any]
    door: Callable[..., Any]

    def __post_init__(self) -> None:
        if not self.name:
            raise TypeError("a memory projection needs a name")
        if not callable(self.fold):
            raise TypeError(f"memory projection {self.name!r} registered without a fold")
        if not callable(self.door):
            raise TypeError(f"memory projection {self.name!r} registered without a door")


def _registry(*projections: Projection) -> dict[str, Projection]:
    names = [p.name for p in projections]
    if len(set(names)) != len(names):
        raise TypeError(f"memory projection registered twice: {names}")
    return {p.name: p for p in projections}


MEMORY_PROJECTIONS: dict[str, Projection] = _registry(
    Projection(name="session", fold=fold_session, door=doors.sessions),
)
MEMORY_PROJECTION_NAMES: frozenset[str] = frozenset(MEMORY_PROJECTIONS)


# --- reading canonical rows -------------------------------------------------------------------


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def rows_after(shard: int, created_at: int, row_id: str, limit: int) -> list[FoldRow]:
    """Rows of one shard strictly past a watermark, in fold order: an idx_buffer_shard_fold seek."""
    # A row-value comparison, not "a > x OR (a = x AND b > y)": both SQLite and PostgreSQL
    # turn it into an index range start, where the OR form filters the whole shard.
    sql = (
        f"SELECT {FOLD_COLUMNS} FROM buffer_entries "
        "WHERE shard = %s AND (created_at, id) > (%s, %s) "
        "ORDER BY shard, created_at, id LIMIT %s"
    )
    return [FoldRow(*r) for r in _fetch(sql, (shard, created_at, row_id, limit))]


def iter_rows_owner_major(batch: int = REBUILD_BATCH) -> Iterator[FoldRow]:
    """Every row, owner by owner, each owner's rows in (created_at, id) order.

    Keyset batches over idx_buffer_owner_fold: memory stays flat however many rows the store
    holds, and a session's rows (which never span owners) still arrive in fold order.
    """
    after: tuple[str, int, str] | None = None
    while True:
        if after is None:
            sql = (
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries "
                "ORDER BY owner_id, created_at, id LIMIT %s"
            )
            params: tuple = (batch,)
        else:
            owner, created_at, row_id = after
            sql = (
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries "
                "WHERE (owner_id, created_at, id) > (%s, %s, %s) "
                "ORDER BY owner_id, created_at, id LIMIT %s"
            )
            params = (owner, created_at, row_id, batch)
        rows = _fetch(sql, params)
        for r in rows:
            yield FoldRow(*r)
        if len(rows) < batch:
            return
        last = rows[-1]
        after = (last[1], last[6], last[0])


def _by_owner(rows: Iterable[FoldRow]) -> Iterator[tuple[str, list[FoldRow]]]:
    owner: str | None = None
    group: list[FoldRow] = []
    for row in rows:
        if row.owner_id != owner:
            if group:
                yield owner, group  # type: ignore[misc]
            owner, group = row.owner_id, []
        group.append(row)
    if group:
        yield owner, group  # type: ignore[misc]


# --- writing projection rows --------------------------------------------------------------------


_SESSION_COLUMNS = (
    "owner_id",
    "session_key",
    "first_at",
    "last_at",
    "memory_count",
    "dialogue_count",
    "last_member_id",
    "content_hash",
)


def _session_values(state: SessionState) -> tuple:
    return (
        state.owner_id,
        state.session_key,
        state.first_at,
        state.last_at,
        state.memory_count,
        state.dialogue_count,
        state.last_member_id,
        session_hash(state),
    )


def upsert_sessions(states: Sequence[SessionState]) -> int:
    if not states:
        return 0
    table = MemorySession._meta.db_table
    columns = ", ".join(_SESSION_COLUMNS)
    marks = ", ".join(["%s"] * len(_SESSION_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in _SESSION_COLUMNS[2:])
    sql = (
        f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
        f"ON CONFLICT (owner_id, session_key) DO UPDATE SET {updates}"
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, [_session_values(s) for s in states])
    return len(states)


def insert_sessions(states: Sequence[SessionState]) -> int:
    if not states:
        return 0
    table = MemorySession._meta.db_table
    columns = ", ".join(_SESSION_COLUMNS)
    marks = ", ".join(["%s"] * len(_SESSION_COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})",
            [_session_values(s) for s in states],
        )
    return len(states)


def load_sessions(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], SessionState]:
    """Stored sessions for exactly these (owner, key) pairs, through the unique index."""
    found: dict[tuple[str, str], SessionState] = {}
    pending = sorted(set(pairs))
    for start in range(0, len(pending), LOOKUP_CHUNK):
        chunk = pending[start : start + LOOKUP_CHUNK]
        where = Q()
        for owner_id, key in chunk:
            where |= Q(owner_id=owner_id, session_key=key)
        for row in MemorySession.objects.filter(where).values_list(*_SESSION_COLUMNS[:7]):
            found[(row[0], row[1])] = state_of(row)
    return found


# --- the incremental cycle ------------------------------------------------------------------------


@dataclass
class CycleResult:
    rows_visited: int = 0
    rows_folded: int = 0
    sessions_written: int = 0
    episodes_written: int = 0
    # rows_visited, broken down: canonical + session + episode rows the queries returned.
    session_rows_read: int = 0
    episode_rows_read: int = 0
    shards_skipped: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {
            "rows_visited": self.rows_visited,
            "rows_folded": self.rows_folded,
            "sessions_written": self.sessions_written,
        }


def _claim(shard: int) -> ProjectionShard | None:
    """Take one shard's row lock for this transaction, or None when another worker holds it."""
    if connection.vendor == "sqlite":
        # SQLite has no row locks; writing first takes the single writer lock before we read
        # the watermark, so a second cycle waits instead of folding the same rows.
        ProjectionShard.objects.filter(shard=shard).update(last_cycle_at=timezone.now())
        return ProjectionShard.objects.filter(shard=shard).first()
    return ProjectionShard.objects.select_for_update(skip_locked=True).filter(shard=shard).first()


def fold_batch(rows: Sequence[FoldRow], result: CycleResult) -> None:
    """Fold rows (fold order) into their stored sessions and episodes and write them back."""
    pairs = {(r.owner_id, session_key_of(r.conversation_id, r.location_id)) for r in rows}
    states = load_sessions(pairs)
    result.session_rows_read += len(states)
    touched: dict[tuple[str, str], SessionState] = {}
    for row in rows:
        pair = (row.owner_id, session_key_of(row.conversation_id, row.location_id))
        state = fold_session(touched.get(pair) or states.get(pair), row)
        touched[pair] = state
    result.sessions_written += upsert_sessions(list(touched.values()))

    walked = episodes.walk_rows(rows)
    result.episode_rows_read += walked.rows_read
    result.episodes_written += walked.written
    result.rows_folded += len(rows)


def run_cycle(
    shards: Iterable[int] | None = None, *, batch_size: int = CYCLE_BATCH, start: int = 0
) -> CycleResult:
    """One forward-only pass: fold every row written past each shard's watermark.

    Each batch is its own transaction under the shard's lock, so writers on that shard wait
    at most one batch and concurrent cycles never fold a row twice. `start` rotates the
    order (shard `start` first): workers sharing shards begin in different places instead of
    all queueing for shard 0 and skipping in step.
    """
    ensure_shards()
    result = CycleResult()
    ordered = sorted(shards if shards is not None else range(shard_count()))
    if ordered:
        turn = start % len(ordered)
        ordered = ordered[turn:] + ordered[:turn]
    for shard in ordered:
        while True:
            with transaction.atomic():
                claimed = _claim(shard)
                if claimed is None:
                    result.shards_skipped.append(shard)
                    break
                rows = rows_after(shard, claimed.last_created_at, claimed.last_id, batch_size)
                if rows:
                    fold_batch(rows, result)
                    last = rows[-1]
                    ProjectionShard.objects.filter(shard=shard).update(
                        last_created_at=last.created_at,
                        last_id=last.id,
                        last_cycle_at=timezone.now(),
                        last_cycle_rows=len(rows),
                    )
            if len(rows) < batch_size:
                break
    result.rows_visited = result.rows_folded + result.session_rows_read + result.episode_rows_read
    return result


# --- rebuild and verify ------------------------------------------------------------------------


@dataclass
class RebuildResult:
    rows_folded: int
    sessions: int
    episodes: int


@dataclass
class VerifyResult:
    sessions: int
    identical: int
    drift: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "identical": self.identical, "drift": self.drift}


def fold_owner(rows: Sequence[FoldRow]) -> dict[str, SessionState]:
    sessions: dict[str, SessionState] = {}
    for row in rows:
        key = session_key_of(row.conversation_id, row.location_id)
        sessions[key] = fold_session(sessions.get(key), row)
    return sessions


def rebuild() -> RebuildResult:
    """The door that re-derives every projection row from the canonical rows alone.

    One transaction: every shard lock is held (writers and cycles wait), the old rows go,
    every row is folded with the same fold the cycle uses, and each watermark is reset to
    its shard's last row. Never run on a timer (seed 003, rule 7).
    """
    ensure_shards()
    rows_folded = sessions_written = episodes_written = 0
    with transaction.atomic():
        list(ProjectionShard.objects.select_for_update().order_by("shard"))
        # On SQLite the delete also takes the writer lock before anything is read.
        MemorySession.objects.all().delete()
        Episode.objects.all().delete()
        pending: list[SessionState] = []
        pending_episodes: list[episodes.EpisodeState] = []
        for _owner, owner_rows in _by_owner(iter_rows_owner_major()):
            rows_folded += len(owner_rows)
            pending.extend(fold_owner(owner_rows).values())
            pending_episodes.extend(episodes.segment(owner_rows))
            if len(pending) >= REBUILD_BATCH:
                sessions_written += insert_sessions(pending)
                pending = []
            if len(pending_episodes) >= REBUILD_BATCH:
                episodes_written += episodes.insert_episodes(pending_episodes)
                pending_episodes = []
        sessions_written += insert_sessions(pending)
        episodes_written += episodes.insert_episodes(pending_episodes)
        for shard in ProjectionShard.objects.order_by("shard"):
            last = _fetch(
                "SELECT created_at, id FROM buffer_entries WHERE shard = %s "
                "ORDER BY shard DESC, created_at DESC, id DESC LIMIT 1",
                (shard.shard,),
            )
            created_at, row_id = last[0] if last else (0, "")
            ProjectionShard.objects.filter(shard=shard.shard).update(
                last_created_at=created_at,
                last_id=row_id,
                last_cycle_at=timezone.now(),
                last_cycle_rows=0,
            )
        for world_id, clock in WorldObject.objects.filter(type="world").values_list(
            "id", "clock_iso"
        ):
            if clock:
                episodes.close_expired(clock, world_id=world_id)
    return RebuildResult(
        rows_folded=rows_folded, sessions=sessions_written, episodes=episodes_written
    )


def _drift(owner_id: str, key: str, field_name: str, stored: Any, rebuilt: Any) -> dict[str, Any]:
    return {
        "owner_id": owner_id,
        "session_key": key,
        "field": field_name,
        "stored": stored,
        "rebuilt": rebuilt,
    }


def verify() -> VerifyResult:
    """Fold afresh, write nothing, and compare every stored session field by field and by hash.

    Only rows at or before their shard's watermark are folded: rows the cycle has not reached
    yet are lag, not drift.
    """
    marks = {s.shard: (s.last_created_at, s.last_id) for s in ProjectionShard.objects.all()}
    drift: list[dict[str, Any]] = []
    identical = 0
    seen_owners: set[str] = set()
    rebuilt_total = 0

    def compare(owner_id: str, rebuilt: dict[str, SessionState]) -> None:
        nonlocal identical
        stored = {row.session_key: row for row in MemorySession.objects.filter(owner_id=owner_id)}
        for key, state in rebuilt.items():
            row = stored.pop(key, None)
            if row is None:
                drift.append(_drift(owner_id, key, "missing", None, list(_session_values(state))))
                continue
            problems = [
                _drift(owner_id, key, name, getattr(row, name), getattr(state, name))
                for name in SESSION_FIELDS
                if getattr(row, name) != getattr(state, name)
            ]
            if row.content_hash != session_hash(state):
                problems.append(
                    _drift(owner_id, key, "content_hash", row.content_hash, session_hash(state))
                )
            if problems:
                drift.extend(problems)
            else:
                identical += 1
        for key, row in stored.items():
            drift.append(_drift(owner_id, key, "extra", row.content_hash, None))

    for owner_id, owner_rows in _by_owner(iter_rows_owner_major()):
        seen_owners.add(owner_id)
        folded = [r for r in owner_rows if (r.created_at, r.id) <= marks.get(r.shard, (0, ""))]
        rebuilt = fold_owner(folded)
        rebuilt_total += len(rebuilt)
        compare(owner_id, rebuilt)
    stored_owners = set(MemorySession.objects.values_list("owner_id", flat=True).distinct())
    for owner_id in sorted(stored_owners - seen_owners):
        compare(owner_id, {})
    return VerifyResult(sessions=rebuilt_total, identical=identical, drift=drift)
