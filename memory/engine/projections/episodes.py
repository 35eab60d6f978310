"""Episodes: per owner, bursts of memories cut by gaps in world time.

Not a projection in seed 003's sense, and deliberately so: there is no closed-form fold,
because an episode can still be open while a session never is. It is a forward-only walk over
the same rows in the same fold order, run inside the projection cycle past the same watermark
(so a row lands in both tiers on the same pass) and re-walked by rebuild().

The rules: a row whose world time is more than the gap after the open episode's latest time
closes that episode and opens the next; an episode also closes when the world clock passes
its latest time plus the gap (close_expired). A row within the gap of the owner's latest
episode joins it, even one the clock had already closed: membership is a function of the
rows alone, so a rebuild lands the same episodes, and closing by clock is re-applied after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings

from memory.active_save import scoped_cursor
from memory.engine.clock import UNTIMED, moment_of_key, time_key
from memory.engine.projections.rows import FoldRow
from memory.models import ClockMark, Episode, WorldObject


def gap() -> timedelta:
    return timedelta(minutes=int(settings.OMNIA_EPISODE_GAP_MINUTES))


class EpisodeState(NamedTuple):
    owner_id: str
    ordinal: int
    first_at: str
    last_at: str
    first_member_id: str
    last_member_id: str
    member_count: int
    is_open: bool
    first_key: str
    last_key: str
    # The instant last_key names; None when the end is unparseable (no row can cut it then).
    last_moment: datetime | None


def _opened(owner_id: str, ordinal: int, row: FoldRow, key: str) -> EpisodeState:
    return EpisodeState(
        owner_id,
        ordinal,
        row.timestamp,
        row.timestamp,
        row.id,
        row.id,
        1,
        True,
        key,
        key,
        moment_of_key(key),
    )


def step(
    state: EpisodeState | None, row: FoldRow, gap_: timedelta | None = None
) -> tuple[EpisodeState | None, EpisodeState]:
    """Walk one row: returns (the episode this row closed, if any; the owner's latest episode)."""
    key = row.key or time_key(row.timestamp)
    if state is None:
        return None, _opened(row.owner_id, 1, row, key)
    # A time that names no instant (an imported row marked untimed) joins the open episode
    # and is never a bound; an episode of only such rows takes its first real time whole.
    if key.startswith("~") or state.last_key.startswith("~"):
        timed = not key.startswith("~")
        return None, state._replace(
            first_at=row.timestamp if timed else state.first_at,
            last_at=row.timestamp if timed else state.last_at,
            first_key=key if timed else state.first_key,
            last_key=key if timed else state.last_key,
            last_moment=moment_of_key(key) if timed else state.last_moment,
            last_member_id=row.id,
            member_count=state.member_count + 1,
            is_open=True,
        )
    first_at, first_key = (
        (row.timestamp, key) if key < state.first_key else (state.first_at, state.first_key)
    )
    # Only a row later than the episode's end can be more than the gap after it, so most rows
    # are decided by one string comparison; the rest by one parse.
    if key > state.last_key:
        moment = moment_of_key(key)
        if (
            moment is not None
            and state.last_moment is not None
            and moment - state.last_moment > (gap_ or gap())
        ):
            return state._replace(is_open=False), _opened(row.owner_id, state.ordinal + 1, row, key)
        last_at, last_key, last_moment = row.timestamp, key, moment
    else:
        last_at, last_key, last_moment = state.last_at, state.last_key, state.last_moment
    return None, EpisodeState(
        state.owner_id,
        state.ordinal,
        first_at,
        last_at,
        state.first_member_id,
        row.id,
        state.member_count + 1,
        True,
        first_key,
        last_key,
        last_moment,
    )


def segment(rows: Sequence[FoldRow], start: EpisodeState | None = None) -> list[EpisodeState]:
    """Every episode the rows touch (one owner's rows, fold order), the latest last.

    `step` row by row, with the open episode's terms in local variables: one state per
    episode, not one per row (the property tests hold this to the cycle's `step`).
    """
    if not rows:
        return []
    out: list[EpisodeState] = []
    gap_ = gap()
    if start is None:
        first = rows[0]
        start_state = _opened(first.owner_id, 1, first, first.key or time_key(first.timestamp))
        rest = rows[1:]
    else:
        start_state, rest = start, rows
    (owner_id, ordinal, first_at, last_at, first_id, last_id, count, is_open, first_key,
     last_key, last_moment) = start_state  # fmt: skip

    def state(open_: bool) -> EpisodeState:
        return EpisodeState(owner_id, ordinal, first_at, last_at, first_id, last_id, count,
                            open_, first_key, last_key, last_moment)  # fmt: skip

    # Rows unpacked, untimed as a comparison (clock.UNTIMED), and the moment read where the
    # row was read: this loop runs once per row a rebuild folds.
    for row_id, _owner, ts, _loc, _conv, _intent, _created, _shard, key, moment in rest:
        if key is None:  # a row built by hand
            key = time_key(ts)
            moment = moment_of_key(key)
        if key >= UNTIMED or last_key >= UNTIMED:  # untimed: as in step()
            if key < UNTIMED:
                first_at = last_at = ts
                first_key = last_key = key
                last_moment = moment
            count += 1
            last_id = row_id
            is_open = True
            continue
        if key > last_key:
            if moment is not None and last_moment is not None and moment - last_moment > gap_:
                # The cut: the open episode closes as it stood before this row.
                out.append(state(False))
                ordinal += 1
                first_at = last_at = ts
                first_id = last_id = row_id
                count, is_open, first_key, last_key, last_moment = 1, True, key, key, moment
                continue
            last_at, last_key, last_moment = ts, key, moment
        elif key < first_key:  # (first_key <= last_key, so only when not past the end)
            first_at, first_key = ts, key
        count += 1
        last_id = row_id
        is_open = True
    out.append(state(is_open))
    return out


def _state_of_values(values: Sequence) -> EpisodeState:
    owner_id, ordinal, first_at, last_at, first_member_id, last_member_id, count, is_open = values
    first_key, last_key = time_key(first_at), time_key(last_at)
    return EpisodeState(
        owner_id,
        int(ordinal),
        first_at,
        last_at,
        first_member_id,
        last_member_id,
        int(count),
        bool(is_open),
        first_key,
        last_key,
        moment_of_key(last_key),
    )


COLUMNS = (
    "owner_id",
    "ordinal",
    "first_at",
    "last_at",
    "first_member_id",
    "last_member_id",
    "member_count",
    "is_open",
)


def _values(state: EpisodeState) -> tuple:
    return tuple(state[:8])


# Raw SQL, not bulk_create(update_conflicts=True): that is 8-10x slower on SQLite (bench_upserts)
def insert_episodes(states: Sequence[EpisodeState]) -> int:
    if not states:
        return 0
    with scoped_cursor() as cursor:
        cursor.insert_rows(Episode._meta.db_table, COLUMNS, [_values(s) for s in states])
    return len(states)


def upsert_episodes(states: Sequence[EpisodeState]) -> int:
    if not states:
        return 0
    table = Episode._meta.db_table
    marks = ", ".join(["%s"] * len(COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[2:])
    with scoped_cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (game_save_id, {', '.join(COLUMNS)}) VALUES (%(save)s, {marks}) "
            f"ON CONFLICT (game_save_id, owner_id, ordinal) DO UPDATE SET {updates}",
            [_values(s) for s in states],
        )
    return len(states)


@dataclass
class WalkResult:
    rows_read: int
    written: int


def walk_rows(rows: Sequence[FoldRow]) -> WalkResult:
    """The incremental walk for one batch: each owner's latest episode, extended by its rows.

    Reads one episode row per owner the batch touches (the newest, through the
    (owner, ordinal) unique index); never scans the episode table.
    """
    by_owner: dict[str, list[FoldRow]] = {}
    for row in rows:
        by_owner.setdefault(row.owner_id, []).append(row)
    latest = latest_episodes(list(by_owner))
    changed: list[EpisodeState] = []
    for owner_id, owner_rows in by_owner.items():
        changed.extend(segment(owner_rows, latest.get(owner_id)))
    return WalkResult(rows_read=len(latest), written=upsert_episodes(changed))


def latest_episodes(owner_ids: Sequence[str]) -> dict[str, EpisodeState]:
    """Each owner's newest episode: one descending probe per owner on the (owner, ordinal) index.

    A UNION ALL of LIMIT 1 branches, not MAX() with a correlated subquery: the latter reads
    every episode the owner has, so the cycle would slow down as the store grows.
    """
    table = Episode._meta.db_table
    columns = ", ".join(COLUMNS)
    found: dict[str, EpisodeState] = {}
    for start in range(0, len(owner_ids), 200):
        chunk = owner_ids[start : start + 200]
        branch = (
            f"SELECT * FROM (SELECT {columns} FROM {table} "
            "WHERE game_save_id = %(save)s AND owner_id = %s "
            "ORDER BY ordinal DESC LIMIT 1) AS latest"
        )
        with scoped_cursor() as cursor:
            cursor.execute(" UNION ALL ".join([branch] * len(chunk)), list(chunk))
            for values in cursor.fetchall():
                found[values[0]] = _state_of_values(values)
    return found


def close_expired(world_clock_iso: str, *, world_id: str | None = None) -> int:
    """Close every open episode whose latest time plus the gap the world clock has passed.

    With world_id, only episodes of that world's entities (each world keeps its own clock).
    Returns how many closed.
    """
    expired, _read = _expired(world_clock_iso, world_id)
    _close(expired)
    return len(expired)


def _close(episode_pks: list[int]) -> None:
    for start in range(0, len(episode_pks), 500):
        Episode.objects.filter(pk__in=episode_pks[start : start + 500]).update(is_open=False)


def _expired(world_clock_iso: str, world_id: str | None) -> tuple[list[int], int]:
    """The open episodes the clock has passed (their keys), and how many open ones were read."""
    clock = time_key(world_clock_iso)
    if clock.startswith("~"):
        raise ValueError(f"world clock {world_clock_iso!r} is not an ISO timestamp")
    open_episodes = Episode.objects.filter(is_open=True)
    if world_id is not None:
        owners = WorldObject.objects.filter(world_id=world_id).values("id")
        open_episodes = open_episodes.filter(owner_id__in=owners)
    now = moment_of_key(clock)
    read = list(open_episodes.values_list("pk", "last_at"))
    expired = [
        pk
        for pk, last_at in read
        if (end := moment_of_key(time_key(last_at))) is not None and now - end > gap()
    ]
    return expired, len(read)


def world_clocks() -> dict[str, str]:
    """world id -> its clock, for every world that has one."""
    return dict(
        WorldObject.objects.filter(type="world", clock_iso__isnull=False)
        .exclude(clock_iso="")
        .values_list("id", "clock_iso")
    )


def close_by_clocks() -> tuple[int, int]:
    """The cycle's clock rule for worlds whose clock moved since the cycle last looked (a
    ClockMark per world): close the open episodes the new time has passed by more than the
    gap. Returns (episodes closed, open episode rows read). Episodes a fold touches are
    closed by the fold itself (closed_by_clock), so a still clock costs nothing."""
    closed = read = 0
    marks = dict(ClockMark.objects.values_list("world_id", "clock_iso"))
    for world_id, clock in world_clocks().items():
        if marks.get(world_id) == clock or time_key(clock).startswith("~"):
            continue
        expired, seen = _expired(clock, world_id)
        _close(expired)
        closed, read = closed + len(expired), read + seen
        ClockMark.objects.update_or_create(world_id=world_id, defaults={"clock_iso": clock})
    return closed, read


def owner_clocks(owner_ids: list[str]) -> dict[str, str]:
    """owner id -> its world's clock, for these owners (one query, bounded by the owners)."""
    world_of: dict[str, str] = {}
    for start in range(0, len(owner_ids), 500):
        chunk = owner_ids[start : start + 500]
        world_of.update(
            WorldObject.objects.filter(id__in=chunk, world_id__isnull=False).values_list(
                "id", "world_id"
            )
        )
    clocks = world_clocks() if world_of else {}  # a handful of worlds per save
    return {owner: clocks[world] for owner, world in world_of.items() if clocks.get(world)}


def closed_by_clock(state: EpisodeState, clock_iso: str | None) -> EpisodeState:
    """The episode as the clock rule leaves it: an open one the clock has passed is closed."""
    if not state.is_open or not clock_iso or state.last_moment is None:
        return state
    now = moment_of_key(time_key(clock_iso))
    if now is not None and now - state.last_moment > gap():
        return state._replace(is_open=False)
    return state
