"""Our side of the follow: what the inspector holds of the file (LiveRow: which row stood at
which rowid), and a batch written into the save with the resume state beside it, through the
import's own helpers (memory.worlds.bulk: insert_ignore, sync_objects, ImportClock), so a
follower killed at any point resumes with no gap and no duplicate; then the derived rows (the
owners whose rows were deleted refolded, the projection cycle, the stored leak findings) and
the version the pages poll. Never reads the game's file: what it writes comes in as
changes.Changes.
"""

from __future__ import annotations

import json
from contextlib import nullcontext

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from memory.active_save import current_id, use
from memory.engine import text_index
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.clock import is_untimed
from memory.engine.projections import problems
from memory.engine.projections.refold import refold_owners
from memory.engine.scopes import home_scope
from memory.engine.shards import bump_generations, notify_written, shard_count, shard_of
from memory.engine.upkeep import run_upkeep
from memory.models import (
    AliasChange,
    BufferEntry,
    LeakScan,
    LedgerEntry,
    LiveFollow,
    LiveRow,
    ObjectType,
    Save,
    WorldObject,
)
from memory.worlds import bulk
from memory.worlds.live.changes import (
    BUCKET_SIZE,
    COLUMNS,
    REWIND_ROWS,
    BatchResult,
    Changes,
    Ours,
    content,
)
from memory.worlds.report import WorldImportError

BULK_WORDS = 1000  # new buffer rows in one batch past which their words go in at once
MODELS = {"buffer_entries": BufferEntry, "ledger_entries": LedgerEntry}


class SaveGone(Exception):
    """The save the follower feeds was replaced or deleted under it (nothing was written)."""

    def __init__(self, name: str, save_id: int, *, replaced: bool) -> None:
        self.name, self.save_id, self.replaced = name, save_id, replaced
        # A batch written before the save went (its follow-up then found it gone): still
        # applied, and reported as such before the stop.
        self.applied: BatchResult | None = None
        if replaced:
            said = (
                f"save {name!r} was replaced by another import under the follower: follower "
                "stopped, nothing written to the retired save; follow into a save of its own "
                "with --as NEW-NAME"
            )
        else:
            said = (
                f"save {name!r} was deleted under the follower: follower stopped, nothing "
                "written after; follow again to read the game from its first row"
            )
        super().__init__(said)


def claim_live(save: Save, name: str) -> None:
    """The transaction's first statement: holds the save row (PostgreSQL: its row lock, which
    a replace's retire and a delete wait for; SQLite: the write lock, taken at once, so no
    replace or delete commits between this look and our rows) and says whether the save is
    still live; SaveGone when it was retired or deleted. The follower is bound to the save's
    identity, never its name: no row goes into a retired save (issue 29, 30 rows lost)."""
    if Save.objects.filter(pk=save.pk, retired_at__isnull=True).update(retired_at=F("retired_at")):
        return
    raise SaveGone(name, save.pk, replaced=Save.objects.filter(pk=save.pk).exists())


def content_between(save: Save, table: str, low: int, high: int) -> dict[str, tuple]:
    """Our rows' content by id, as the file's rows carry it (changes.COLUMNS), for the rows
    we hold at rowids after `low` up to `high`: one statement (LiveRow names them), about
    29 ms per 1,000 rows on SQLite (an id list in chunks of 500 took twice as long)."""
    model, columns = MODELS[table], COLUMNS[table]
    ids = (
        LiveRow.objects.in_save(save)
        .filter(table_name=table, rowid__gt=low, rowid__lte=high)
        .values("entry_id")
    )
    return {
        row[0]: content(row)
        for row in model.objects.in_save(save).filter(id__in=ids).values_list(*columns)
    }


def held(save: Save | None, table: str, mark: int) -> Ours:
    """The LiveRow rows at or before the watermark: how many, and the newest (for a rewind)."""
    if not mark or save is None:
        return Ours()
    rows = LiveRow.objects.in_save(save).filter(table_name=table, rowid__lte=mark)
    return Ours(
        held=rows.count(),
        tail=list(rows.order_by("-rowid").values_list("rowid", "entry_id")[:REWIND_ROWS]),
    )


def held_buckets(save: Save, table: str, mark: int) -> dict[int, int]:
    """How many rows we hold in each rowid bucket at or before the watermark: counted by the
    database on the (save, table, rowid) index (at a million rows the rows never come to
    Python, which took about a second of every deletion)."""
    return dict(
        LiveRow.objects.in_save(save)
        .filter(table_name=table, rowid__lte=mark)
        .annotate(bucket=F("rowid") / BUCKET_SIZE)
        .values("bucket")
        .annotate(n=Count("*"))
        .values_list("bucket", "n")
    )


def held_between(save: Save, table: str, low: int, high: int) -> list[tuple[int, str]]:
    """The (rowid, id) rows we hold from `low` to `high`."""
    return list(
        LiveRow.objects.in_save(save)
        .filter(table_name=table, rowid__gte=low, rowid__lte=high)
        .values_list("rowid", "entry_id")
    )


def write_batch(
    changes: Changes,
    *,
    follow: int,
    identity: tuple[int, int],
    source: str,
    replaced: str | None = None,
) -> BatchResult:
    """One batch's rows and the resume state that says they are in, in the active save; the
    caller holds the transaction. `follow` is the LiveFollow's key, `identity` the file's
    (device, inode)."""
    result = BatchResult(replaced=replaced)
    state = LiveFollow.objects.select_for_update().get(pk=follow)
    marks = bulk.lock_all_shards()
    touched: set[str] = set()
    deleted_owners: set[str] = set()
    if changes.small is not None:
        object_rows, attribute_rows, acl_rows, worlds = changes.small
        gone = WorldObject.objects.filter(world_id__in=changes.world_ids).exclude(
            id__in=list(worlds)
        )
        gone_ids = list(gone.values_list("id", flat=True))
        if gone_ids:  # the game removed objects: their rows go with them
            deleted_owners.update(gone_ids)
            # The file's foreign keys cascaded these away; the batch says so ("-20
            # buffer_entries"), not only "objects synced" (issue 30).
            for table, model in (("buffer_entries", BufferEntry), ("ledger_entries", LedgerEntry)):
                owned = model.objects.filter(owner_id__in=gone_ids)
                result.deleted[table] = result.deleted.get(table, 0) + owned.count()
                owned.delete()
            result.deleted["objects"] = len(gone_ids)
            gone.delete()
        record_alias_changes(object_rows)
        bulk.sync_objects(object_rows, attribute_rows, acl_rows)
        # The save's source hash is part of every viewer's leak-findings fingerprint: a
        # moved hash is how the stored findings learn that the world changed; the pages
        # learn it from the scan rows, every one of them now behind.
        Save.objects.filter(pk=current_id()).update(source_sha256=f"live:{changes.small_hash}")
        LeakScan.objects.mark_stale()
        result.objects_synced = True
    clock = bulk.ImportClock(marks)
    for table, model, tc in (
        ("buffer_entries", BufferEntry, changes.buffer),
        ("ledger_entries", LedgerEntry, changes.ledger),
    ):
        if tc.deleted:
            ids = [entry_id for _rowid, entry_id in tc.deleted]
            for start in range(0, len(ids), 500):
                chunk = model.objects.filter(id__in=ids[start : start + 500])
                deleted_owners.update(o for o in chunk.values_list("owner_id", flat=True) if o)
                result.deleted[table] = result.deleted.get(table, 0) + chunk.count()
                chunk.delete()
            rowids = [r for r, _ in tc.deleted]
            for start in range(0, len(rowids), 500):
                LiveRow.objects.filter(
                    table_name=table, rowid__in=rowids[start : start + 500]
                ).delete()
        if tc.rewound_to is not None:
            LiveRow.objects.filter(table_name=table, rowid__gt=tc.rewound_to).delete()
        if tc.rewritten:
            owners = _rewrite(model, table, tc.rewritten)
            deleted_owners.update(owners)  # refolded with the new content
            LeakScan.objects.mark_stale(owners)
            result.rewritten[table] = len(tc.rewritten)
    shards = shard_count()
    buffer_rows = [
        (
            *row[1:],
            clock.take(shard_of(row[2], shards)),
            shard_of(row[2], shards),
            is_untimed(row[3]),
        )
        for row in changes.buffer.new
    ]
    # A game's first load or a long catch-up comes in full batches: their words in one
    # statement; a live trickle of rows through the row-by-row trigger.
    bulk_words = text_index.filled_after() if len(buffer_rows) >= BULK_WORDS else nullcontext()
    with bulk_words:
        added = bulk.insert_ignore("buffer_entries", bulk.BUFFER_COLUMNS, buffer_rows)
    if added != len(buffer_rows):
        _check_owners(source, "buffer_entries", BufferEntry, changes.buffer.new)
    result.added["buffer_entries"] = added
    touched.update(row[2] for row in changes.buffer.new)
    ledger_rows = [
        (
            *row[1:],
            home_scope(row[2]),
            f"ledger/{row[1]}",
            clock.take(shard_of(row[2], shards)),
        )
        for row in changes.ledger.new
    ]
    added = bulk.insert_ignore("ledger_entries", bulk.LEDGER_COLUMNS, ledger_rows)
    if added != len(ledger_rows):
        _check_owners(source, "ledger_entries", LedgerEntry, changes.ledger.new)
    result.added["ledger_entries"] = added
    touched.update(row[2] for row in changes.ledger.new if row[2])
    # file_order: the row's rowid in the file, so an export keeps the game's order.
    result.added["ledger_involved_entities"] = bulk.insert_ignore(
        "ledger_involved_entities",
        ("entry_id", "entity_id", "file_order"),
        [(entry_id, entity_id, rowid) for rowid, entry_id, entity_id in changes.involved],
    )
    LiveRow.objects.bulk_create(
        [
            LiveRow(table_name=table, rowid=row[0], entry_id=row[1])
            for table, tc in (
                ("buffer_entries", changes.buffer),
                ("ledger_entries", changes.ledger),
            )
            for row in tc.new
        ],
        batch_size=1000,
    )
    bump_generations(touched | deleted_owners)
    bulk.advance_shards(clock.assigned)
    pending = set(json.loads(state.pending_refold)) | deleted_owners
    LiveFollow.objects.filter(pk=follow).update(
        world_id=changes.world_ids[0] if changes.world_ids else "",
        device=identity[0],
        inode=identity[1],
        buffer_mark=changes.buffer.mark,
        buffer_mark_id=changes.buffer.mark_id,
        ledger_mark=changes.ledger.mark,
        ledger_mark_id=changes.ledger.mark_id,
        involved_mark=changes.involved_mark,
        small_tables_hash=changes.small_hash,
        pending_refold=json.dumps(sorted(pending)),
        batches=state.batches + 1,
        applied_at=timezone.now(),
    )
    notify_written()
    return result


def _aliases(text: str | None) -> dict[str, str] | None:
    try:
        return parse_aliases_json(text)
    except AliasesJsonError:
        return None  # unreadable on either side: no change can be told, none is recorded


def record_alias_changes(object_rows: list[tuple]) -> int:
    """The game changed what someone calls someone: one AliasChange per (viewer, target) whose
    label moved since the last batch, stamped with its world's clock as this batch reads it.
    The file keeps only the latest aliases, so this history is the only one there is: a
    pair over time and a prompt at a moment read it. Read before the objects are synced."""
    clocks = {row[0]: row[3] for row in object_rows if row[1] == ObjectType.WORLD}
    entities = {row[0]: row for row in object_rows if row[1] == ObjectType.ENTITY}
    stored: dict[str, str | None] = {}
    ids = list(entities)
    for start in range(0, len(ids), 500):
        stored.update(
            WorldObject.objects.filter(id__in=ids[start : start + 500]).values_list(
                "id", "aliases_json"
            )
        )
    changes = []
    for viewer_id, row in entities.items():
        if viewer_id not in stored:
            continue  # a newcomer's first aliases are where it starts, not a change
        before, after = _aliases(stored[viewer_id]), _aliases(row[5])
        if before is None or after is None or before == after:
            continue
        world_time = clocks.get(row[2] or "") or ""
        for target in dict.fromkeys([*before, *after]):
            if before.get(target) != after.get(target):
                changes.append(
                    AliasChange(
                        viewer_id=viewer_id,
                        target_id=target,
                        before=before.get(target),
                        after=after.get(target),
                        source="live",
                        world_time=world_time,
                    )
                )
    AliasChange.objects.bulk_create(changes)
    return len(changes)


def _rewrite(model, table: str, rows: list[tuple]) -> set[str]:
    """The game's new content of rows it rewrote in place (same id), written over ours; the
    owners before and after, whose projections are folded again."""
    columns = COLUMNS[table][1:]
    ids = [row[1] for row in rows]
    owners = set(model.objects.filter(id__in=ids).values_list("owner_id", flat=True))
    for row in rows:
        model.objects.filter(id=row[1]).update(**dict(zip(columns, row[2:], strict=True)))
        owners.add(row[2])
    return {o for o in owners if o}


def _check_owners(source: str, table: str, model, rows: list[tuple]) -> None:
    """A row skipped on conflict must be the same row (a resumed batch), never another
    world's row with the same id."""
    by_id = {row[1]: row[2] for row in rows}
    ids = list(by_id)
    for start in range(0, len(ids), 500):
        for entry_id, owner in model.objects.filter(id__in=ids[start : start + 500]).values_list(
            "id", "owner_id"
        ):
            if owner != by_id[entry_id]:
                raise WorldImportError(
                    source, table, f"id={entry_id}", f"id already belongs to {owner!r}"
                )


def derive(save: Save, follow: int, pending: list[str]) -> int:
    """The derived rows, current in the same cycle: owners with deleted rows refolded (how
    many is returned), the projection cycle, the stored leak findings; then the version the
    pages poll moves."""
    refolded = 0
    with use(save):
        if pending:
            refolded = refold_owners(pending)
        run_upkeep()
        problems.cycle_passed()
        LiveFollow.objects.filter(pk=follow).update(
            pending_refold="[]", version=F("version") + 1, heartbeat_at=timezone.now()
        )
    return refolded


def readable(follow: int) -> None:
    """The batch's rows are readable: pages may show them before the fold and the leak
    rescan (derive moves the version again once those are current)."""
    LiveFollow.every_save.filter(pk=follow).update(version=F("version") + 1)


def heartbeat(save: Save, name: str, follow: int) -> None:
    """The follower is running (the pages' "live" marker), into a save still live: an idle
    game's follower learns here that its save was replaced or deleted (SaveGone)."""
    with transaction.atomic():
        claim_live(save, name)
        LiveFollow.every_save.filter(pk=follow).update(heartbeat_at=timezone.now())
