"""Every way in lands in a save: a new one under the name chosen, never a silent merge.

The same file again under the same name is a no-op that says so; another file under a name
already taken is refused with the two ways forward (`--as`, `--replace`); `--replace` fills a
new save beside the old one and swaps the name over in the same transaction, so a reader
sees the old save or the new one, never a mix. What people made here on the old save (alias
edits, accepted leak findings, session summaries) is carried to the new one where the same
ids exist, and the report says what was kept and what was dropped.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, OperationalError, transaction
from django.db.models import F

from memory.active_save import use
from memory.engine.aliases import AliasesJsonError, dump_aliases_json, parse_aliases_json
from memory.engine.errors import Conflict
from memory.engine.planner import WORLD_TABLES, refresh_statistics
from memory.engine.saves import check_name, purge_retired, retire
from memory.models import (
    AliasChange,
    LeakAcceptance,
    ObjectType,
    OwnerState,
    Save,
    SessionSummary,
    WorldObject,
)
from memory.worlds.report import ImportReport


class SaveTaken(Conflict):
    """A different file for a save that exists, without --replace. Nothing was written."""

    def __init__(self, save: Save, source: str) -> None:
        self.save = save
        super().__init__(
            f"save {save.name!r} already holds {save.source_name or save.kind} "
            f"(imported {save.imported_at:%Y-%m-%d %H:%M} UTC), not {source}. "
            f"Keep both with --as NEW-NAME, or swap this file in with --replace",
            field="name",
        )


@dataclass(frozen=True)
class Arrival:
    """Where the rows come from, recorded on the save as its provenance."""

    name: str
    kind: str  # "sqlite", "scenario", "demo"
    source: str  # the path as given
    sha256: str
    size: int | None = None
    command: str = ""
    actor: str = ""  # who, in words: "cli:alice", an account name
    # The user chose the name (--as): then the same content under another name is a second
    # copy on purpose; without it, the same content anywhere is "already imported".
    named: bool = False

    @property
    def source_name(self) -> str:
        return self.source.replace("\\", "/").rsplit("/", 1)[-1]


def land(
    arrival: Arrival, *, replace: bool = False, fill: Callable[[], ImportReport]
) -> ImportReport:
    """Write a world into the save `arrival.name` through `fill` (run inside the new save)."""
    check_name(arrival.name)
    purge_retired()
    same = Save.objects.live().filter(name__iexact=arrival.name).first()
    if same is not None and same.source_sha256 == arrival.sha256:
        return ImportReport.unchanged_save(same, arrival.source)
    if not arrival.named and not replace:
        copy = Save.objects.live().filter(source_sha256=arrival.sha256).order_by("pk").first()
        if copy is not None:
            return ImportReport.unchanged_save(copy, arrival.source)
    if same is not None and not replace:
        raise SaveTaken(same, arrival.source)
    try:
        with transaction.atomic():
            _claim_the_write_lock()
            old = Save.objects.select_for_update().live().filter(name__iexact=arrival.name).first()
            if old is not None and old.source_sha256 == arrival.sha256:
                return ImportReport.unchanged_save(old, arrival.source)  # the race's winner
            if old is not None and not replace:
                raise SaveTaken(old, arrival.source)
            target = Save.objects.create(
                # Beside the old save until the swap: it keeps its name until then.
                name=arrival.name if old is None else f"{arrival.name}~new-{secrets.token_hex(4)}",
                kind=arrival.kind,
                source_name=arrival.source_name,
                source_path=arrival.source,
                source_size=arrival.size,
                source_sha256=arrival.sha256,
                command=arrival.command,
                imported_by=arrival.actor,
            )
            with use(target):
                report = fill()
            target.era = report.era
            target.title = report.title
            target.world_ids_json = json.dumps(report.worlds)
            target.counts_json = json.dumps(report.counts)
            target.save(update_fields=["era", "title", "world_ids_json", "counts_json"])
            if old is not None:
                report.kept, report.dropped = carry_over(old, target)
                retire(old, target)
                report.replaced = True
            # Names are unique as folded (demo, Demo, DEMO are one): a replace keeps the old one.
            report.save = arrival.name if old is None else old.name
    except OperationalError as exc:
        if not _busy(exc):
            raise
        raise Conflict(
            f"the database is busy with another write (waited {_BUSY_WAIT_S} s); nothing was "
            "written: try again when it ends",
            field="name",
        ) from None
    except IntegrityError:
        # Two imports raced for one new name; the other won. Say so as the refusal would.
        taken = Save.objects.live().filter(name__iexact=arrival.name).first()
        if taken is None:
            raise
        raise SaveTaken(taken, arrival.source) from None
    # A world arrives in bulk: leave the planner current, as no user would think to (issue 25).
    report.statistics_s = refresh_statistics(WORLD_TABLES)
    return report


# SQLite's busy timeout (settings.py); PostgreSQL waits on its row locks instead.
_BUSY_WAIT_S = 20
_SQLITE_BUSY = 5  # the primary result code; extended codes (BUSY_SNAPSHOT, 517) share its low byte


def _claim_the_write_lock() -> None:
    """A write as the transaction's first statement. SQLite's busy timeout waits for a lock
    only when a transaction begins to write; one that read first and then meets another
    writer's commit fails at once with "database is locked" (two imports under one name, an
    import while a follower writes: issue 29). An UPDATE matching no row takes the write lock,
    waiting its turn; on PostgreSQL it takes nothing."""
    Save.objects.filter(pk=-1).update(retired_at=F("retired_at"))


def _busy(exc: OperationalError) -> bool:
    code = getattr(exc.__cause__, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == _SQLITE_BUSY


def carry_over(old: Save, new: Save) -> tuple[dict[str, int], dict[str, int]]:
    """What people made on `old` that still applies to `new` (the same viewer and target
    ids), copied across; returns (kept, dropped) counts by kind."""
    with use(new):
        entities = set(
            WorldObject.objects.filter(type=ObjectType.ENTITY).values_list("id", flat=True)
        )
    kept = {"alias edits": 0, "accepted leak findings": 0, "session summaries": 0}
    dropped = dict(kept)
    with use(old):
        generations = dict(OwnerState.objects.values_list("owner_id", "generation"))
        # People's edits only: a change the follower saw in play is the old game's story,
        # which the new file tells again in its own aliases.
        changes = list(AliasChange.objects.exclude(source="live").order_by("changed_at", "id"))
        accepted = list(LeakAcceptance.objects.all())
        summaries = list(SessionSummary.objects.all())
    latest: dict[tuple[str, str], AliasChange] = {}
    for change in changes:
        latest[(change.viewer_id, change.target_id)] = change
    with use(new):
        _move_generations_past(generations)
        applies = {pair for pair in latest if pair[0] in entities and pair[1] in entities}
        _apply_alias_edits({pair: latest[pair].after for pair in applies})
        AliasChange.objects.bulk_create(
            [_copy(c, new) for c in changes if (c.viewer_id, c.target_id) in applies]
        )
        kept["alias edits"] = len(applies)
        dropped["alias edits"] = len(latest) - len(applies)
        keep = [a for a in accepted if a.viewer_id in entities]
        LeakAcceptance.objects.bulk_create([_copy(a, new) for a in keep])
        kept["accepted leak findings"] = len(keep)
        dropped["accepted leak findings"] = len(accepted) - len(keep)
        words = [s for s in summaries if s.owner_id in entities]
        SessionSummary.objects.bulk_create([_copy(s, new) for s in words])
        kept["session summaries"] = len(words)
        dropped["session summaries"] = len(summaries) - len(words)
    return kept, dropped


def _move_generations_past(old: dict[str, int]) -> None:
    """A replace is a write for every owner both saves know: each generation moves past the
    old save's, so an abstract() pinned before the replace is refused after it (seed 003)."""
    new = dict(OwnerState.objects.values_list("owner_id", "generation"))
    for owner_id, before in old.items():
        OwnerState.objects.update_or_create(
            owner_id=owner_id, defaults={"generation": before + max(new.get(owner_id, 0), 1)}
        )


def _copy(row, save: Save):
    row.pk = None
    row.game_save = save
    return row


def _apply_alias_edits(edits: dict[tuple[str, str], str | None]) -> None:
    """The label each (viewer, target) was last given here, written onto the new save's
    viewer (None: the alias was deleted here, so it is deleted there too)."""
    by_viewer: dict[str, dict[str, str | None]] = {}
    for (viewer_id, target_id), label in edits.items():
        by_viewer.setdefault(viewer_id, {})[target_id] = label
    for viewer in WorldObject.objects.filter(id__in=list(by_viewer)):
        try:
            aliases = parse_aliases_json(viewer.aliases_json)
        except AliasesJsonError:
            aliases = {}
        for target_id, label in by_viewer[viewer.id].items():
            if label is None:
                aliases.pop(target_id, None)
            else:
                aliases[target_id] = label
        viewer.aliases_json = dump_aliases_json(aliases)
        viewer.save(update_fields=["aliases_json"])
