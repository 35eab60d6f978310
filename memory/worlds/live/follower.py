"""The follow itself: one followed file feeding one save, a tick at a time, and the loop that
ticks until asked to stop.

A tick reads what changed (source), checks it as the import would (checks), and applies it
in one transaction with the resume state beside it (apply). The first batch lands through the
save door (memory.worlds.save_door) into a save of its own. Then the owners whose rows were
deleted are refolded, the projection cycle runs and the stored leak findings follow, and the
follow's version moves (the pages' cue). A file that is not the game we followed any more
(another inode at the path, another world, rows that disagree with what we applied, other
rows where every row we applied stood: a new file that got the old inode) is followed from
its first row into a new save that replaces the old one as `import_omnia --replace` does.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from django.db import DatabaseError, transaction

from memory.active_save import current_id, use
from memory.engine.errors import Conflict
from memory.engine.planner import WORLD_TABLES, Growth, refresh_statistics
from memory.engine.projections import problems
from memory.engine.saves import check_name, default_name
from memory.models import BufferEntry, LiveFollow, Save
from memory.worlds.live import apply, checks
from memory.worlds.live.apply import SaveGone
from memory.worlds.live.changes import (
    BATCH_ROWS,
    BUCKET_SHIFT,
    SWEEP_ROWS,
    BatchResult,
    Changes,
    Replaced,
    TableChanges,
    content,
)
from memory.worlds.live.source import GameFile, NotWhole, patiently
from memory.worlds.report import ImportReport, WorldImportError
from memory.worlds.save_door import Arrival, land


class FollowRefused(Conflict):
    """The save named is not this file's follow (nothing was written)."""


class Follower:
    """One followed file feeding one save. `tick()` applies what changed since the last tick
    (or nothing). The save is `name` (default: the file's name, as import_omnia names it)."""

    def __init__(
        self,
        path: str | Path,
        *,
        name: str = "",
        batch_rows: int = BATCH_ROWS,
        actor: str = "",
        command: str = "",
    ):
        self.path = Path(path).resolve()
        self.source = str(self.path)
        self.name = check_name(name or default_name(self.path))
        self.file = GameFile(self.path, batch_rows=batch_rows)
        self.actor, self.command = actor, command
        self.last_heartbeat = 0.0
        self.save: Save | None = None
        self.state = LiveFollow(path=self.source)
        self.growth = Growth()
        # The rewrite sweep, per table: the rowid it goes on after (None: none under way), and
        # whether the file changed since it began (then another follows it).
        self.sweep_at: dict[str, int | None] = {"buffer_entries": None, "ledger_entries": None}
        self.sweep_due: dict[str, bool] = {"buffer_entries": True, "ledger_entries": True}
        self._sweep_started: set[str] = set()
        self.follow_up_due = False  # the last follow-up failed: tried again at the next tick
        self._load()

    @property
    def seen_version(self) -> tuple | None:
        """The file's stat at the last look; None: read again at the next tick."""
        return self.file.seen_version

    @seen_version.setter
    def seen_version(self, value: tuple | None) -> None:
        self.file.seen_version = value

    # --- the resume state ---------------------------------------------------------------

    def _load(self) -> None:
        save = Save.objects.live().filter(name=self.name).first()
        if save is None:
            self.save, self.state = None, LiveFollow(path=self.source)
            return
        follow = LiveFollow.objects.in_save(save).first()
        if follow is None:
            raise FollowRefused(
                f"save {self.name!r} holds {save.source_name or save.kind} imported "
                f"{save.imported_at:%Y-%m-%d %H:%M} UTC, not a followed game: follow into "
                "another save with --as NEW-NAME",
                field="name",
            )
        if follow.path != self.source:
            raise FollowRefused(
                f"save {self.name!r} follows {follow.path}, not {self.source}: "
                "follow this file into another save with --as NEW-NAME",
                field="name",
            )
        self.save, self.state = save, follow
        self.growth = Growth(at_statistics=BufferEntry.objects.in_save(save).count())

    def _refresh(self) -> None:
        if self.state.pk is not None:
            self.state = LiveFollow.every_save.get(pk=self.state.pk)

    # --- the file -----------------------------------------------------------------------

    def open(self) -> None:
        """Open the file now: refuses (WorldImportError) one that is missing or no omnia save."""
        self.file.open()

    def close(self) -> None:
        self.file.close()

    def changed(self) -> bool:
        """Whether the file may hold something we have not applied (GameFile.changed), or the
        rewrite sweep has rows left to compare."""
        if self.file.changed():
            self.sweep_due = dict.fromkeys(self.sweep_due, True)
            return True
        return any(at is not None for at in self.sweep_at.values())

    def read(self, *, sweep: bool = True) -> Changes:
        """Everything that changed: what we hold read first, then the file statement by
        statement, checked; the rows that went away at or before a watermark are named only
        when a count says some did."""
        conn = self.file.open()
        state = self.state
        if state.device and (state.device, state.inode) != self.file.identity:
            raise Replaced("another file at the path")
        ours = {
            "buffer_entries": apply.held(self.save, "buffer_entries", state.buffer_mark),
            "ledger_entries": apply.held(self.save, "ledger_entries", state.ledger_mark),
        }
        changes = patiently(lambda: self.file.snapshot(state, ours))
        if sweep and self.save is not None:
            self._sweep(changes)
        patiently(lambda: checks.check(conn, self.source, state, changes))
        for table, tc in (("buffer_entries", changes.buffer), ("ledger_entries", changes.ledger)):
            if tc.present_before is not None:
                self._find_deleted(table, tc)
        return changes

    def _sweep(self, changes: Changes) -> None:
        """One window of the rewrite sweep per table: the file's rows at or before the
        watermark compared with ours, content for content; the rows whose id we hold with
        other content are rewritten in place (applied as the batch's). A row whose id we do
        not hold at all is the deletion check's (a count moves), not the sweep's."""
        self._sweep_started.clear()
        for table, tc in (("buffer_entries", changes.buffer), ("ledger_entries", changes.ledger)):
            start = self.sweep_at[table]
            if start is None:
                if not self.sweep_due[table]:
                    continue
                start = 0
                self._sweep_started.add(table)
            if table == "ledger_entries" and not self.file.schema()["has_ledger"]:
                continue
            upto = tc.effective_mark
            rows = patiently(lambda: self.file.rows_between(table, start, upto, SWEEP_ROWS))  # noqa: B023
            ours = apply.content_between(self.save, table, start, rows[-1][0] if rows else start)
            tc.rewritten = [
                row for row in rows if row[1] in ours and ours[row[1]] != content(row[1:])
            ]
            tc.sweep_next = rows[-1][0] if len(rows) == SWEEP_ROWS else None

    def _find_deleted(self, table: str, tc: TableChanges) -> None:
        """Rows we applied (at or before the watermark) that the file no longer has, found
        bucket by bucket: only buckets whose counts differ are compared id by id."""
        mark = tc.effective_mark
        ours = apply.held_buckets(self.save, table, mark)
        present, differing = patiently(lambda: self.file.scan_buckets(table, ours, mark))
        for bucket in differing:
            low, high = bucket << BUCKET_SHIFT, ((bucket + 1) << BUCKET_SHIFT) - 1
            for rowid, entry_id in apply.held_between(self.save, table, low, min(high, mark)):
                if present.get(rowid) != entry_id:
                    # Only the last rowid is ever handed out again (the game deleted its
                    # newest row and wrote another since): the next read rewinds to it.
                    if rowid in present and rowid != mark:
                        raise Replaced(f"{table} rowid {rowid} holds another row")
                    tc.deleted.append((rowid, entry_id))

    def _swept(self, changes: Changes) -> None:
        """The sweep goes on where this batch's window ended (once its rewrites are in)."""
        self.sweep_at = {"buffer_entries": changes.buffer.sweep_next}
        self.sweep_at["ledger_entries"] = changes.ledger.sweep_next
        for table in self._sweep_started:
            self.sweep_due[table] = False
        self._sweep_started.clear()

    # --- applying -----------------------------------------------------------------------

    def apply(self, changes: Changes, replaced: str | None = None) -> BatchResult:
        """One transaction: the rows and the resume state that says they are in. The first
        batch of a save (and of a new game at the path) lands through the save door, as an
        import does: a new save, or with --replace semantics, the old one retired."""
        if self.save is not None and replaced is None:
            with use(self.save), transaction.atomic():
                apply.claim_live(self.save, self.name)
                result = self._write(changes)
            if self.growth.add(sum(result.added.values())):
                refresh_statistics(WORLD_TABLES)  # the game has doubled since the last ones
        else:
            if self.save is not None:
                # A new game at the path replaces our save, never one an import put under
                # the name since (that one is not ours to replace).
                with transaction.atomic():
                    apply.claim_live(self.save, self.name)
            result = BatchResult(replaced=replaced)

            def fill() -> ImportReport:
                self.state = LiveFollow.objects.create(game_save_id=current_id(), path=self.source)
                result.__dict__.update(self._write(changes, replaced=replaced).__dict__)
                return ImportReport(
                    source=self.source,
                    era=changes.era,
                    worlds=changes.world_ids,
                    counts=dict(result.added),
                )

            arrival = Arrival(
                name=self.name,
                kind="sqlite",
                source=self.source,
                # No whole-file hash for a file being written: the hash of its small tables
                # and the moment, so the door never takes it for the same file again.
                sha256=f"live:{changes.small_hash}:{time.time_ns()}",
                size=os.stat(self.path).st_size,
                command=self.command,
                actor=self.actor,
                named=True,  # a followed game is its own save, whatever else holds its rows
            )
            land(arrival, replace=replaced is not None, fill=fill)  # statistics taken there
            self.growth = Growth(at_statistics=sum(result.added.values()))
            self.save = Save.objects.live().get(name=self.name)
        self._refresh()
        result.lag_s = max(0.0, time.time() - changes.file_mtime)
        return result

    def _write(self, changes: Changes, replaced: str | None = None) -> BatchResult:
        return apply.write_batch(
            changes,
            follow=self.state.pk,
            identity=self.file.identity,
            source=self.source,
            replaced=replaced,
        )

    def follow_up(self, result: BatchResult | None = None) -> BatchResult:
        """The derived rows, current in the same cycle (apply.derive); then the version."""
        result = result or BatchResult()
        pending = json.loads(self.state.pending_refold)
        try:
            with transaction.atomic():
                apply.claim_live(self.save, self.name)  # derived rows go into a live save only
                result.refolded = apply.derive(self.save, self.state.pk, pending)
        except (SaveGone, DatabaseError):
            raise
        except Exception as exc:
            # A helper of the cycle raised on this save's data: the rows stay applied, the
            # failure is the save's problem row (its page says it), the next tick tries the
            # follow-up again; the follower goes on (issue 29).
            with use(self.save):
                result.cycle_failed = problems.cycle_failed(exc)
            self.follow_up_due = True
        else:
            self.follow_up_due = False
        self._refresh()
        result.version = self.state.version
        return result

    def heartbeat(self, every: float = 2.0) -> None:
        now = time.monotonic()
        if (
            self.save is not None
            and self.state.pk is not None
            and now - self.last_heartbeat >= every
        ):
            apply.heartbeat(self.save, self.name, self.state.pk)
            self.last_heartbeat = now

    # --- one tick -----------------------------------------------------------------------

    def tick(self) -> BatchResult | None:
        """Apply one batch if the file changed; None when nothing changed. The file is open
        only inside the tick (nothing held on it between looks: the game may switch its
        journal mode and checkpoint at any time)."""
        try:
            return self._tick()
        finally:
            self.file.close()

    def _tick(self) -> BatchResult | None:
        if self.save is not None and (self.follow_up_due or json.loads(self.state.pending_refold)):
            self.follow_up()  # a follower stopped before its follow-up (or it failed): again
        if not self.changed():
            self.heartbeat()
            return None
        replaced = None
        try:
            changes = self.read()
        except Replaced as exc:
            # Another game: read it from its first row, into a save that replaces this one.
            replaced = str(exc)
            self.state = LiveFollow(path=self.source)
            self.close()
            self.changed()
        try:
            if replaced is not None:
                changes = self.read(sweep=False)  # a new game: nothing of ours to compare
            # Read: the file is let go before our writes (an open connection, even idle,
            # keeps a WAL game's journal-mode switch waiting).
            self.file.close()
            if changes.empty and replaced is None and self.save is not None:
                self._swept(changes)
                self.heartbeat()
                return None
            result = self.apply(changes, replaced=replaced)
        except SaveGone:
            raise  # the save is not ours any more: nothing to go back to
        except BaseException:
            self._load()  # nothing was applied: back to the state that is stored
            self._sweep_started.clear()  # its window again, later
            raise
        self._swept(changes)
        apply.readable(self.state.pk)
        if changes.more:
            self.seen_version = None  # rows wait beyond the batch: read on at the next tick
        try:
            return self.follow_up(result)
        except SaveGone as gone:
            gone.applied = result  # its rows went in before the save went: say so
            raise


def waiting_for(exc: Exception) -> str | None:
    """One line for a file we cannot take now (the game holds a lock; its schema changed; it
    is damaged or half written; a row we refuse), or None when the error is not the file's."""
    if isinstance(exc, WorldImportError):
        if isinstance(exc, NotWhole):  # a table or column gone, damage
            return f"{exc}; waiting for it to be whole again"
        return f"{exc}; waiting for the file to change"  # one row refused
    if isinstance(exc, sqlite3.DatabaseError):
        text = str(exc)
        if "locked" in text or "busy" in text:
            return "the game holds a lock; waiting"
        return f"the file cannot be read ({text}); waiting for it to be whole again"
    return None


def follow(
    follower: Follower,
    *,
    interval: float,
    should_stop: Callable[[], bool],
    report: Callable[[BatchResult], None],
    on_wait: Callable[[str], None],
) -> None:
    """Tick until asked to stop; a stop request lets the batch in hand finish first. A file
    we cannot take now (waiting_for) is said once, in one line, and looked at again every
    interval until it reads whole ("resumed"); nothing is applied meanwhile. A save replaced
    or deleted under the follower (SaveGone) ends it."""
    waiting: str | None = None
    while not should_stop():
        try:
            result = follower.tick()
        except (WorldImportError, sqlite3.DatabaseError) as exc:
            line = waiting_for(exc)
            if line is None:
                raise
            if line != waiting:
                on_wait(line)
            waiting = line
            follower.seen_version = None  # look again at the next tick, changed or not
            time.sleep(interval)
            continue
        if waiting is not None:
            on_wait("resumed: the file reads whole again")
            waiting = None
        if result is not None:
            report(result)
            if follower.seen_version is None:
                continue  # a batch left rows behind: on at once
        if not should_stop():
            time.sleep(interval)
