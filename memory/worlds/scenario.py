"""Way in: an omnia scenario JSON (plus our optional layers, long-term memories and
abstractions), validated whole (`scenario_doc`) and then written in one transaction like a
world file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.engine import text_index
from memory.engine.abstract import AbstractConflict, abstract
from memory.engine.saves import default_name
from memory.engine.shards import bump_generations, generation_of, shard_of
from memory.engine.strict_json import MAX_DEPTH, JsonRefused, parse, value_problem
from memory.models import AbstractionEdge, Layer, LayerSubscription, LedgerEntry
from memory.worlds import bulk
from memory.worlds.report import ImportReport, WorldImportError
from memory.worlds.save_door import Arrival, land
from memory.worlds.scenario_doc import Scenario, js_json


def load_world(
    path_or_doc: str | Path | dict,
    *,
    source: str | None = None,
    as_name: str | None = None,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    command: str = "",
    actor: str = "",
    kind: str = "scenario",
) -> ImportReport:
    """Load an omnia scenario JSON (plus our optional layers/memories/abstractions) into a save
    of its own: `as_name`, else the file's name (save_door.land decides new, same or refused).
    `progress` is called with the count of rows each step wrote (a command's progress bar)."""
    size = None
    if isinstance(path_or_doc, dict):
        doc, source = path_or_doc, source or "<scenario>"
        sha = hashlib.sha256(js_json(doc).encode()).hexdigest()
    else:
        path = Path(path_or_doc)
        source = source or str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise WorldImportError(source, "-", "-", f"cannot read file ({exc.strerror})") from None
        try:
            doc = parse(raw)
        except JsonRefused as exc:
            raise WorldImportError(source, "scenario", "-", str(exc)) from None
        except RecursionError:
            raise WorldImportError(
                source, "scenario", "-", f"JSON nested deeper than {MAX_DEPTH} levels"
            ) from None
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            raise WorldImportError(
                source, "scenario", f"line {line} column {column}", "not UTF-8 text"
            ) from None
        except json.JSONDecodeError as exc:
            raise WorldImportError(
                source, "scenario", f"line {exc.lineno} column {exc.colno}", f"not JSON ({exc.msg})"
            ) from None
        sha = hashlib.sha256(raw).hexdigest()
        size = len(raw)
    # Every string and every nesting once, before any section reads it: NUL, lone
    # surrogates (json.loads lets "\ud800" through) and depth, with the path named.
    found = value_problem(doc)
    if found:
        raise WorldImportError(source, "scenario", found[0], found[1])
    scenario = Scenario(doc, source)
    scenario.parse()
    arrival = Arrival(
        name=as_name if as_name is not None else default_name(source),
        kind=kind,
        source=source,
        sha256=sha,
        size=size,
        command=command,
        actor=actor,
        named=as_name is not None,
    )
    return land(
        arrival,
        replace=replace,
        fill=lambda: _write(scenario, source, str(doc.get("name") or ""), progress),
    )


def _write(scenario: Scenario, source: str, title: str, progress) -> ImportReport:
    """The scenario's rows into the active save (inside save_door.land's transaction)."""
    era = "v2" if any('"content"' in mem[4] for mem in scenario.memories) else "v1"
    report = ImportReport(source=source, era=era, worlds=[scenario.world_id], title=title)
    marks = bulk.lock_all_shards()
    report.counts.update(bulk.sync_objects(scenario.objects, scenario.attributes, scenario.acl))
    clock = bulk.ImportClock(marks)
    rows = []
    for (
        mem_id,
        owner,
        timestamp,
        location,
        intent_json,
        outcome_json,
        conversation,
    ) in scenario.memories:
        shard = shard_of(owner)
        rows.append(
            (
                mem_id,
                owner,
                timestamp,
                location,
                intent_json,
                outcome_json,
                0,
                clock.take(shard),
                shard,
                conversation,
            )
        )
    with text_index.filled_after():
        inserted = bulk.insert_ignore(
            "buffer_entries",
            (
                "id",
                "owner_id",
                "timestamp",
                "location_id",
                "intent_json",
                "outcome_json",
                "pinned",
                "created_at",
                "shard",
                "conversation_id",
            ),
            rows,
        )
    report.counts["buffer_entries"] = inserted
    report.skipped["buffer_entries"] = len(rows) - inserted
    if progress is not None:
        progress(len(scenario.objects) + len(rows))
    for layer_id, title in scenario.layers:
        Layer.objects.update_or_create(
            id=layer_id, defaults={"world_id": scenario.world_id, "title": title}
        )
    entry_rows = [
        (
            e["id"],
            e["owner"],
            e["timestamp"],
            None,
            e["body"],
            None,
            e["importance"],
            None,
            e["scope"],
            e["slug"],
            e["name"],
            e["draft_name"],
            e["withheld"],
            clock.take(shard_of(e["owner"] or e["scope"])),
        )
        for e in scenario.entries
    ]
    entries_inserted = bulk.insert_ignore(
        "ledger_entries",
        (
            "id",
            "owner_id",
            "timestamp",
            "location_id",
            "content",
            "quotes_json",
            "importance",
            "embedding",
            "scope_id",
            "slug",
            "name",
            "draft_name",
            "withheld",
            "created_at",
        ),
        entry_rows,
    )
    if entries_inserted != len(entry_rows):
        existing = LedgerEntry.objects.filter(id__in=[e["id"] for e in scenario.entries])
        wanted = {e["id"]: e["scope"] for e in scenario.entries}
        for entry in existing:
            if entry.scope_id != wanted[entry.id]:
                raise WorldImportError(
                    source,
                    "ledger_entries",
                    f"id={entry.id}",
                    "id already belongs to another scope",
                )
    report.counts["ledger_entries"] = entries_inserted
    if progress is not None:
        progress(len(entry_rows))
    entity_ids = [row[0] for row in scenario.objects if row[1] == "entity"]
    LayerSubscription.objects.filter(entity_id__in=entity_ids).delete()
    LayerSubscription.objects.bulk_create(
        LayerSubscription(entity_id=e, layer_id=layer, position=pos)
        for e, layer, pos in scenario.subscriptions
    )
    # Every write for an owner bumps its generation (seed 003): new memories or entries
    # from a load too, so an abstract() pinned before the reload is refused.
    bump_generations(
        ({row[1] for row in rows} if inserted else set())
        | ({row[1] for row in entry_rows if row[1]} if entries_inserted else set())
    )
    bulk.advance_shards(clock.assigned)
    report.counts["abstractions"] = _land_abstractions(source, scenario.abstractions)
    return report


def _land_abstractions(source: str, abstractions: list[dict[str, Any]]) -> int:
    if not abstractions:
        return 0
    landed = 0
    for i, raw in enumerate(abstractions):
        existing = LedgerEntry.objects.filter(id=raw["id"]).only("id", "owner_id").first()
        if existing is not None:
            if (
                existing.owner_id == raw["owner"]
                and AbstractionEdge.objects.filter(
                    rollup_id=raw["id"], owner_id=raw["owner"]
                ).exists()
            ):
                continue  # a re-load: this rollup already landed
            raise WorldImportError(
                source,
                "memory_abstraction_edges",
                f"abstractions[{i}] (id={raw['id']})",
                "id already names another long-term entry",
            )
        try:
            abstract(
                raw["owner"],
                list(raw["members"]),
                name=raw["name"],
                body=raw["body"],
                slug=raw.get("slug"),
                rollup_id=raw["id"],
                expected_generation=generation_of(raw["owner"]),
            )
        except (AbstractConflict, ValueError) as exc:
            raise WorldImportError(
                source, "memory_abstraction_edges", f"abstractions[{i}] (id={raw['id']})", str(exc)
            ) from None
        landed += 1
    return landed
