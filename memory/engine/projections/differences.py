"""What a rebuild writes: the differences between its fold of each owner and the owner's
stored sessions and episodes (seed 003, rule 7: every row re-derived; a row already stored as
the fold gives it stays). Each process compares the owners it folds, reading the stored rows
of a range of owners at a time; the rebuild's own process writes what differs, an owner's
sessions whole (a few each) and its episodes from the first that differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import NamedTuple, TypeVar

from memory.active_save import scoped_cursor, scoped_rows
from memory.engine.projections import episodes, problems
from memory.engine.projections.rows import REBUILD_BATCH
from memory.engine.projections.sessions import (
    SESSION_COLUMNS,
    SessionState,
    insert_sessions,
    session_values,
)
from memory.models import Episode, MemorySession

_RECENCY = attrgetter("last_key", "owner_id")
T = TypeVar("T")


def by_recency(states: Iterable[T]) -> list[T]:
    """Sessions or episodes in the order of their last moment, not owner by owner. Each
    owner's latest is the row the next cycle updates: written in this order, those rows share
    the table's last pages, where owner-major order gave each owner a page of its own (the
    cycle's commit wrote every one of them to the WAL)."""
    return sorted(states, key=_RECENCY)


class OwnerFold(NamedTuple):
    """One owner's fold, and what of it differs from the stored rows: only that is written."""

    owner_id: str
    rows: int
    sessions: int  # the owner's sessions as folded
    episodes: int
    # None when the stored sessions are the folded ones; else every session of the owner,
    # which replace the stored ones (an owner holds a few).
    new_sessions: list[SessionState] | None
    # None when the stored episodes are the folded ones; else (the last ordinal kept, or
    # None for none, the folded episodes after it): a drift is mended from where it starts.
    new_episodes: tuple[int | None, list[episodes.EpisodeState]] | None
    bad: list[problems.Problem]
    misplaced: bool  # rows outside the owner's shard: moved after the fold


_SESSIONS, _EPISODES = MemorySession._meta.db_table, Episode._meta.db_table
# Owners whose stored rows are read (and compared) per statement: a range of the owner order
# the fold walks, read through each table's (save, owner, …) unique index. A list of owners
# ("IN (…)") over 250 of them had PostgreSQL scan every episode of the save for each.
DIFF_OWNERS = 100
_SESSION_SQL = (
    f"SELECT {', '.join(SESSION_COLUMNS)} FROM {_SESSIONS} WHERE game_save_id = %(save)s "
    "AND owner_id >= %s AND owner_id <= %s ORDER BY owner_id, session_key"
)
_EPISODE_SQL = (
    f"SELECT {', '.join(episodes.COLUMNS)} FROM {_EPISODES} WHERE game_save_id = %(save)s "
    "AND owner_id >= %s AND owner_id <= %s ORDER BY owner_id, ordinal"
)


def _stored(sql: str, first: str, last: str) -> dict[str, list[tuple]]:
    """The stored rows of the owners from `first` to `last` (the store's order, the fold's)."""
    found: dict[str, list[tuple]] = {}
    for row in scoped_rows(sql, (first, last)):
        found.setdefault(row[0], []).append(row)
    return found


def _episodes_from(
    stored: list[tuple], folded: list[episodes.EpisodeState]
) -> tuple[int | None, list[episodes.EpisodeState]] | None:
    """Where the folded episodes part from the stored ones (stored in ordinal order): None
    when nowhere, else the last stored ordinal that still agrees and the episodes after it."""
    pairs = enumerate(zip(stored, folded, strict=False))
    agree = next(
        (i for i, (row, state) in pairs if tuple(row) != state[:8]),  # is_open 1 == True
        min(len(stored), len(folded)),
    )
    if agree == len(stored) == len(folded):
        return None
    return (stored[agree - 1][1] if agree else None), folded[agree:]


def diffed(
    folds: list[tuple[str, int, list, list, list, bool]], compare: bool = True
) -> Iterator[OwnerFold]:
    """These owners' folds with what differs from their stored sessions and episodes (two
    reads for all of them; none without `compare`: nothing is stored)."""
    named = [fold[0] for fold in folds if fold[0].__class__ is str]  # (a poison row's NULL)
    stored_sessions: dict[str, list[tuple]] = {}
    stored_episodes: dict[str, list[tuple]] = {}
    if named and compare:
        stored_sessions = _stored(_SESSION_SQL, named[0], named[-1])
        stored_episodes = _stored(_EPISODE_SQL, named[0], named[-1])
    for owner, rows, sessions, owner_episodes, bad, misplaced in folds:
        if compare:
            folded = {session_values(s) for s in sessions}
            kept = stored_sessions.get(owner, [])
            same = len(kept) == len(folded) and folded.issuperset(map(tuple, kept))
        else:
            same = not sessions
        yield OwnerFold(
            owner,
            rows,
            len(sessions),
            len(owner_episodes),
            None if same else sessions,
            _episodes_from(stored_episodes.get(owner, []), owner_episodes),
            bad,
            misplaced,
        )


def stored_owners(owners: tuple[str | None, str | None]) -> set[str]:
    """Owners with stored sessions or episodes, of the owners in `owners` (as
    iter_rows_owner_major bounds them)."""
    low, high = owners
    bounds = ("" if low is None else " AND owner_id >= %s") + (
        "" if high is None else " AND owner_id < %s"
    )
    params = [p for p in owners if p is not None]
    found = set()
    for table in (_SESSIONS, _EPISODES):
        sql = f"SELECT DISTINCT owner_id FROM {table} WHERE game_save_id = %(save)s{bounds}"
        found.update(row[0] for row in scoped_rows(sql, params))
    return found


class Writes:
    """The differences a rebuild found, written a batch at a time: an owner's stored rows
    that differ go first, then the folded rows that replace them."""

    def __init__(self) -> None:
        self.written = 0
        self._clear()

    def _clear(self) -> None:
        self.session_owners: list[str] = []
        self.sessions: list[SessionState] = []
        self.episode_cuts: list[tuple[str, int | None]] = []
        self.episodes: list[episodes.EpisodeState] = []

    def add(self, owner: OwnerFold) -> None:
        if owner.new_sessions is not None:
            self.session_owners.append(owner.owner_id)
            self.sessions.extend(owner.new_sessions)
        if owner.new_episodes is not None:
            after, states = owner.new_episodes
            self.episode_cuts.append((owner.owner_id, after))
            self.episodes.extend(states)
        if len(self.sessions) + len(self.episodes) >= REBUILD_BATCH:
            self.flush()

    def flush(self) -> None:
        with scoped_cursor() as cursor:
            for start in range(0, len(self.session_owners), DIFF_OWNERS):
                chunk = self.session_owners[start : start + DIFF_OWNERS]
                cursor.execute(
                    f"DELETE FROM {_SESSIONS} WHERE game_save_id = %(save)s "
                    f"AND owner_id IN ({', '.join(['%s'] * len(chunk))})",
                    chunk,
                )
            whole = [owner for owner, after in self.episode_cuts if after is None]
            for start in range(0, len(whole), DIFF_OWNERS):
                chunk = whole[start : start + DIFF_OWNERS]
                cursor.execute(
                    f"DELETE FROM {_EPISODES} WHERE game_save_id = %(save)s "
                    f"AND owner_id IN ({', '.join(['%s'] * len(chunk))})",
                    chunk,
                )
            if tail := [(o, after) for o, after in self.episode_cuts if after is not None]:
                cursor.executemany(
                    f"DELETE FROM {_EPISODES} WHERE game_save_id = %(save)s "
                    "AND owner_id = %s AND ordinal > %s",
                    tail,
                )
        self.written += insert_sessions(by_recency(self.sessions))
        self.written += episodes.insert_episodes(by_recency(self.episodes))
        self._clear()
