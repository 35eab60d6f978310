"""Projection workers: the `run_projections --loop` engine, the write wake-up, and lag status.

A worker runs `run_cycle` until told to stop. Several workers may run against one
PostgreSQL: run_cycle claims each shard's row with SELECT … FOR UPDATE SKIP LOCKED, so a
shard is folded by one worker at a time and a worker that finds a shard busy moves on to
the next one instead of queueing behind it. Adding workers adds throughput up to the shard
count (OMNIA_PROJECTION_SHARDS).

Between cycles a worker sleeps until either the poll interval passes or, on PostgreSQL, a
writer's NOTIFY on CHANNEL arrives. The poll stays as a safety net: a notification sent while
the worker was mid-cycle is not lost (it wakes the next wait), and a missed one only costs
one poll interval.

SIGTERM and SIGINT set a flag; the cycle in progress finishes (each batch is its own
transaction, so even a SIGKILL loses at most one uncommitted batch, which the next cycle
folds again from the unchanged watermark) and the loop exits 0.
"""

from __future__ import annotations

import contextlib
import logging
import random
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from django.db import DatabaseError, connection, connections
from django.utils import timezone

from memory.active_save import converted_rows, scoped_cursor, scoped_rows
from memory.engine.clock import wall_iso
from memory.engine.projections.cycle import CycleResult, run_cycle
from memory.engine.saves import each_save
from memory.engine.shards import CHANNEL, shard_count
from memory.models import ProjectionShard

logger = logging.getLogger(__name__)

# How often a sleeping worker looks at its stop flag; bounds how long SIGTERM waits when idle.
WAKE_SLICE = 0.25
# After a database error the worker backs off this long before trying again (no restart).
ERROR_BACKOFF = 2.0


def is_read_only_error(exc: BaseException) -> bool:
    """SQLite's "attempt to write a readonly database" (a read-only file, PRAGMA query_only)
    and PostgreSQL's "cannot execute … in a read-only transaction" (a hot standby)."""
    return "readonly" in str(exc).lower().replace(" ", "").replace("-", "")


# --- lag -------------------------------------------------------------------------------------


def _rows_behind(watermarks: list[tuple[int, int, str]]) -> list[int]:
    """Rows past each (shard, created_at, id) watermark, in one statement (a round trip a
    shard was a fifth of a save page's projection panel): each count the same
    idx_buffer_shard_fold range the cycle reads, so its cost is the lag."""
    if not watermarks:
        return []
    count = (
        "(SELECT COUNT(*) FROM buffer_entries "
        "WHERE game_save_id = %(save)s AND shard = %s AND (created_at, id) > (%s, %s))"
    )
    with scoped_cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join([count] * len(watermarks)),
            [value for mark in watermarks for value in mark],
        )
        return [int(n) for n in cursor.fetchone()]


# Each stored shard with the rows past its watermark, counted on the idx_buffer_shard_fold
# range the cycle reads (a correlated count a shard: the panel's two round trips were one more
# than it needs, on every save page, the overview and /healthz).
_STATUS = (
    "SELECT s.shard, s.last_created_at, s.last_id, s.last_cycle_at, s.last_cycle_rows, "
    "(SELECT COUNT(*) FROM buffer_entries b WHERE b.game_save_id = s.game_save_id "
    "AND b.shard = s.shard AND (b.created_at, b.id) > (s.last_created_at, s.last_id)) "
    "FROM memory_projection_shards s WHERE s.game_save_id = %(save)s"
)
_STATUS_FIELDS = ("shard", "last_created_at", "last_id", "last_cycle_at", "last_cycle_rows")


def projection_status() -> dict[str, Any]:
    """Per shard: watermark, rows written but not yet folded, last cycle; plus totals.

    Read-only: a shard whose row does not exist yet is reported at watermark zero, not created.
    """
    rows = scoped_rows(_STATUS, {})
    counted = converted_rows(ProjectionShard, _STATUS_FIELDS, [r[:-1] for r in rows])
    stored = {r[0]: r for r in counted}
    behind = {r[0]: int(r[-1]) for r in rows}
    # A shard no cycle has written yet (a new save, more shards configured): from the start.
    unwritten = [(n, 0, "") for n in range(shard_count()) if n not in stored]
    behind.update(zip((n for n, _c, _i in unwritten), _rows_behind(unwritten), strict=True))
    marks = sorted([(n, *row[1:3]) for n, row in stored.items()] + unwritten)
    shards: list[dict[str, Any]] = []
    for number, created_at, row_id in marks:
        row = stored.get(number)
        last_cycle_at = row[3] if row else None
        shards.append(
            {
                "shard": number,
                "watermark": {"created_at": created_at, "id": row_id},
                "rows_behind": behind[number],
                "last_cycle_at": wall_iso(last_cycle_at) if last_cycle_at else None,
                "last_cycle_rows": row[4] if row else 0,
            }
        )
    cycles = [s["last_cycle_at"] for s in shards if s["last_cycle_at"]]
    oldest = min(cycles) if cycles else None
    return {
        "shard_count": len(shards),
        "lag_rows": sum(s["rows_behind"] for s in shards),
        "oldest_cycle_at": oldest,
        "shards": shards,
    }


def lag_every_save() -> int:
    """Rows written but not yet folded, over every save."""
    return sum(lag for _save, lag in each_save(lambda _s: projection_status()["lag_rows"]))


# --- the loop ----------------------------------------------------------------------------------


@dataclass
class LoopStats:
    cycles: int = 0
    rows_folded: int = 0
    errors: int = 0
    wakeups: int = 0
    started: float = field(default_factory=time.monotonic)


class StopFlag:
    """Set by SIGTERM/SIGINT; checked between cycles and while waiting, never mid-batch."""

    def __init__(self) -> None:
        self.stopping = False
        self.signal: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        self.signal = signum

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self)
        signal.signal(signal.SIGINT, self)


class Waker:
    """Waits up to `poll` seconds, returning early on a NOTIFY (PostgreSQL) or a stop request."""

    def __init__(self, poll: float, stop: StopFlag, listen: bool = True) -> None:
        self.poll = poll
        self.stop = stop
        self._listener: Any = None
        if listen and connection.vendor == "postgresql":
            self._listen()

    @property
    def listening(self) -> bool:
        return self._listener is not None

    def _listen(self) -> None:
        # Its own autocommit connection: the worker's main connection spends its time inside
        # cycle transactions, and notifications are only read between statements.
        try:
            wrapper = connections.create_connection("default")
            wrapper.ensure_connection()
            wrapper.set_autocommit(True)
            wrapper.connection.execute(f"LISTEN {CHANNEL}")
            self._listener = wrapper
        except DatabaseError as exc:
            logger.warning("LISTEN %s failed, polling instead: %s", CHANNEL, exc)
            self._listener = None

    def wait(self) -> bool:
        """True when woken by a notification, False on timeout or stop."""
        deadline = time.monotonic() + self.poll
        while not self.stop.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            slice_ = min(WAKE_SLICE, left)
            if self._listener is None:
                time.sleep(slice_)
                continue
            try:
                got = list(self._listener.connection.notifies(timeout=slice_, stop_after=1))
            except Exception as exc:  # the listener is optional; fall back to polling
                logger.warning("listener connection lost, polling instead: %s", exc)
                self.close()
                continue
            if got:
                self.drain()
                return True
        return False

    def drain(self) -> None:
        # A burst of writes sends many notifications; one cycle serves them all.
        if self._listener is None:
            return
        with contextlib.suppress(Exception):
            list(self._listener.connection.notifies(timeout=0, stop_after=1000))

    def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):
                self._listener.close()
            self._listener = None


def run_loop(
    *,
    poll: float = 5.0,
    shards: Sequence[int] | None = None,
    stop: StopFlag | None = None,
    max_cycles: int | None = None,
    on_cycle: Callable[[CycleResult], None] | None = None,
    cycle: Callable[..., CycleResult] = run_cycle,
    listen: bool = True,
    settle: float = 0.0,
) -> LoopStats:
    """Run cycles until `stop` is set (or `max_cycles` ran); database errors back off and retry.

    `settle`: after a NOTIFY wakes the worker it waits this long before folding, so a steady
    stream of writes is folded in batches (at most one cycle per `settle` seconds) instead
    of one cycle, with its per-shard claims, per written row. The price is that much lag.
    """
    stop = stop or StopFlag()
    stats = LoopStats()
    waker = Waker(poll, stop, listen=listen)
    # Each worker starts its cycles at its own shard and moves one on per cycle, so workers
    # sharing shards spread over them rather than meeting on the same one.
    turn = random.randrange(1 << 16)
    try:
        while not stop.stopping:
            try:
                result = cycle(shards=shards, start=turn + stats.cycles)
            except DatabaseError as exc:
                if is_read_only_error(exc):
                    raise  # retrying cannot help; the command turns it into a clear message
                # The database went away or refused; drop the broken connection and retry.
                stats.errors += 1
                logger.warning("projection cycle failed, retrying in %ss: %s", ERROR_BACKOFF, exc)
                connection.close()
                _sleep(ERROR_BACKOFF, stop)
                continue
            stats.cycles += 1
            stats.rows_folded += result.rows_folded
            if on_cycle is not None:
                on_cycle(result)
            if max_cycles is not None and stats.cycles >= max_cycles:
                break
            # No immediate re-run even when rows were folded: run_cycle already drains each
            # shard to the moment it looked, and a row written during the cycle has left a
            # pending NOTIFY (PostgreSQL), so wait() returns at once. Spinning here instead
            # costs a cycle's queries per handful of rows under a steady write load.
            if stop.stopping:
                break
            if waker.wait():
                stats.wakeups += 1
                if settle > 0:
                    _sleep(settle, stop)
                    waker.drain()
    finally:
        waker.close()
    return stats


def _sleep(seconds: float, stop: StopFlag) -> None:
    deadline = time.monotonic() + seconds
    while not stop.stopping and time.monotonic() < deadline:
        time.sleep(min(WAKE_SLICE, deadline - time.monotonic()))


def parse_shards(value: str | None) -> list[int] | None:
    """'0,1' → [0, 1]; empty → None (every shard). Refuses anything out of range."""
    if not value:
        return None
    count = shard_count()
    picked: list[int] = []
    for part in value.split(","):
        part = part.strip()
        # ASCII digits: str.isdigit alone also takes "²", which int() refuses.
        if not (part.isascii() and part.isdigit()) or int(part) >= count:
            raise ValueError(f"--shards: {part!r} is not a shard number in 0..{count - 1}")
        picked.append(int(part))
    return sorted(set(picked))


def describe(result: CycleResult) -> str:
    return (
        f"{wall_iso(timezone.now(), timespec='seconds')} folded {result.rows_folded} rows "
        f"into {result.sessions_written} sessions; skipped shards {result.shards_skipped}"
    )


def shard_list(values: Iterable[int] | None) -> str:
    return ",".join(str(v) for v in values) if values is not None else "all"
