"""Way in: an omnia scenario JSON (plus our optional layers, long-term memories and
abstractions), validated whole and then written in one transaction like a world file.

Longer than most modules on purpose: it is one file format read top to bottom, section by
section, and splitting it would scatter the rules of one format over several files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from memory.engine.abstract import AbstractConflict, abstract
from memory.engine.aliases import AliasesJsonError, dump_aliases_json, parse_aliases_json
from memory.engine.intents import IntentError, parse_intent, parse_outcome
from memory.engine.longterm.names import committed_name
from memory.engine.scopes import home_scope, layer_scope
from memory.engine.shards import bump_generations, generation_of, shard_of
from memory.models import Layer, LayerSubscription, LedgerEntry
from memory.worlds import bulk
from memory.worlds.report import ImportReport, WorldImportError
from memory.worlds.validation import VISIBILITIES


def _js_json(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _Scenario:
    """Validates a scenario document and turns it into rows; raises on the first bad one."""

    def __init__(self, doc: Any, source: str) -> None:
        self.source = source
        if not isinstance(doc, dict):
            self.fail("scenario", "-", "the document must be a JSON object")
        self.doc = doc
        self.objects: list[tuple] = []
        self.attributes: list[tuple] = []
        self.acl: list[tuple] = []
        self.memories: list[
            tuple
        ] = []  # (id, owner, timestamp, location, intent_json, outcome_json, conversation)
        self.layers: list[tuple[str, str]] = []
        self.entries: list[dict[str, Any]] = []  # long-term entries with scope/owner
        self.subscriptions: list[tuple[str, str, int]] = []
        self.abstractions: list[dict[str, Any]] = []
        self.ids: dict[str, str] = {}  # object id -> where it was declared

    def fail(self, table: str, row: str, problem: str) -> None:
        raise WorldImportError(self.source, table, row, problem)

    def text(
        self, obj: dict, key: str, table: str, row: str, *, required: bool = True
    ) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value):
            self.fail(table, row, f"{key!r} must be a non-empty string")
        return value

    def declare(self, object_id: str, where: str, table: str) -> None:
        if object_id in self.ids:
            self.fail(
                table,
                where,
                f"duplicate id {object_id!r} (first declared at {self.ids[object_id]})",
            )
        self.ids[object_id] = where

    def add_attributes(self, object_id: str, attrs: Any, table: str, where: str) -> None:
        if attrs is None:
            return
        if not isinstance(attrs, list):
            self.fail(table, where, "'attributes' must be a list")
        names = set()
        for i, attr in enumerate(attrs):
            at = f"{where}.attributes[{i}]"
            if not isinstance(attr, dict):
                self.fail(table, at, "an attribute must be an object")
            name = self.text(attr, "name", table, at)
            value = attr.get("value")
            if not isinstance(value, str | int | float | bool):
                self.fail(table, at, "'value' must be a string")
            visibility = attr.get("visibility", "PUBLIC")
            if visibility not in VISIBILITIES:
                self.fail(table, at, f"visibility {visibility!r} is not PUBLIC or PRIVATE")
            if name in names:
                self.fail(table, at, f"duplicate attribute {name!r}")
            names.add(name)
            self.attributes.append((object_id, name, str(value), visibility))
            for entity_id in attr.get("allowedEntities") or []:
                if not isinstance(entity_id, str):
                    self.fail(table, at, "allowedEntities must be a list of ids")
                self.acl.append((object_id, name, entity_id))

    def entry(self, raw: Any, scope: str, owner: str | None, where: str) -> None:
        if not isinstance(raw, dict):
            self.fail("ledger_entries", where, "an entry must be an object")
        entry_id = self.text(raw, "id", "ledger_entries", where)
        slug = self.text(raw, "slug", "ledger_entries", where)
        body = raw.get("body")
        if not isinstance(body, str):
            self.fail("ledger_entries", where, "'body' must be a string")
        importance = raw.get("importance", 5)
        if not isinstance(importance, int) or not 1 <= importance <= 10:
            self.fail("ledger_entries", where, "'importance' must be an integer 1–10")
        self.declare(entry_id, where, "ledger_entries")
        self.entries.append(
            {
                "id": entry_id,
                "owner": owner,
                "scope": scope,
                "slug": slug,
                "body": body,
                # Trimmed as omnia's frontmatter parse trims; blank means no name (slug rule).
                "name": committed_name(
                    self.text(raw, "name", "ledger_entries", where, required=False)
                ),
                "draft_name": committed_name(
                    self.text(raw, "draft_name", "ledger_entries", where, required=False)
                ),
                "withheld": bool(raw.get("withheld", False)),
                "importance": importance,
                "timestamp": raw.get("timestamp") or self.doc.get("startTime") or "",
            }
        )

    def parse(self) -> None:
        doc = self.doc
        world_id = self.text(doc, "id", "scenario", "id")
        start = self.text(doc, "startTime", "scenario", "startTime")
        self.world_id = world_id
        self.declare(world_id, "id", "objects")
        self.objects.append((world_id, "world", None, start, None, None, None, None))
        for key in ("name", "description"):
            if isinstance(doc.get(key), str):
                self.attributes.append((world_id, key, doc[key], "PRIVATE"))
        self.add_attributes(
            world_id, (doc.get("world") or {}).get("attributes"), "objects", "world"
        )

        locations = doc.get("locations") or []
        if not isinstance(locations, list):
            self.fail("objects", "locations", "'locations' must be a list")
        for i, loc in enumerate(locations):
            where = f"locations[{i}]"
            if not isinstance(loc, dict):
                self.fail("objects", where, "a location must be an object")
            loc_id = self.text(loc, "id", "objects", where)
            self.declare(loc_id, where, "objects")
            connections = loc.get("connections")
            self.objects.append(
                (
                    loc_id,
                    "location",
                    world_id,
                    None,
                    loc.get("parentId"),
                    None,
                    _js_json(connections) if connections is not None else None,
                    None,
                )
            )
            self.add_attributes(loc_id, loc.get("attributes"), "objects", where)

        entities = doc.get("entities")
        if not isinstance(entities, list):
            self.fail("objects", "entities", "'entities' must be a list")
        for layer_i, layer in enumerate(doc.get("layers") or []):
            where = f"layers[{layer_i}]"
            if not isinstance(layer, dict):
                self.fail("memory_layers", where, "a layer must be an object")
            layer_id = self.text(layer, "id", "memory_layers", where)
            if any(existing == layer_id for existing, _ in self.layers):
                self.fail("memory_layers", where, f"duplicate layer id {layer_id!r}")
            self.layers.append((layer_id, str(layer.get("title") or layer_id)))
            for j, raw in enumerate(layer.get("entries") or []):
                self.entry(raw, layer_scope(layer_id), None, f"{where}.entries[{j}]")
        layer_ids = {layer_id for layer_id, _ in self.layers}

        for i, ent in enumerate(entities):
            where = f"entities[{i}]"
            if not isinstance(ent, dict):
                self.fail("objects", where, "an entity must be an object")
            ent_id = self.text(ent, "id", "objects", where)
            self.declare(ent_id, where, "objects")
            aliases = ent.get("aliases") or {}
            try:
                alias_map = parse_aliases_json(_js_json(aliases))
            except AliasesJsonError as exc:
                self.fail("objects", where, f"aliases: {exc}")
            is_agent = ent.get("isAgent", ent.get("is_agent", True))
            self.objects.append(
                (
                    ent_id,
                    "entity",
                    world_id,
                    None,
                    ent.get("locationId"),
                    dump_aliases_json(alias_map),
                    None,
                    1 if is_agent else 0,
                )
            )
            self.add_attributes(ent_id, ent.get("attributes"), "objects", where)
            for j, mem in enumerate(ent.get("initialMemories") or []):
                at = f"{where}.initialMemories[{j}]"
                if not isinstance(mem, dict):
                    self.fail("buffer_entries", at, "a memory must be an object")
                mem_id = self.text(mem, "id", "buffer_entries", at)
                self.declare(mem_id, at, "buffer_entries")
                intent = mem.get("intent")
                try:
                    parse_intent(intent if isinstance(intent, dict) else _js_json(intent))
                    outcome = mem.get("outcome")
                    if outcome is not None:
                        parse_outcome(outcome)
                except IntentError as exc:
                    self.fail("buffer_entries", f"{at} (id={mem_id})", str(exc))
                self.memories.append(
                    (
                        mem_id,
                        ent_id,
                        self.text(mem, "timestamp", "buffer_entries", at),
                        self.text(mem, "locationId", "buffer_entries", at, required=False),
                        _js_json(intent),
                        _js_json(outcome) if outcome is not None else None,
                        self.text(mem, "conversationId", "buffer_entries", at, required=False),
                    )
                )
            for position, layer_id in enumerate(ent.get("layers") or []):
                if layer_id not in layer_ids:
                    self.fail(
                        "memory_layer_subscriptions",
                        f"{where}.layers[{position}]",
                        f"unknown layer {layer_id!r}",
                    )
                self.subscriptions.append((ent_id, layer_id, position))
            for j, raw in enumerate(ent.get("memories") or []):
                self.entry(raw, home_scope(ent_id), ent_id, f"{where}.memories[{j}]")

        for i, raw in enumerate(doc.get("abstractions") or []):
            where = f"abstractions[{i}]"
            if not isinstance(raw, dict):
                self.fail("memory_abstraction_edges", where, "an abstraction must be an object")
            for key in ("id", "owner", "name", "body"):
                self.text(raw, key, "memory_abstraction_edges", where)
            members = raw.get("members")
            if not isinstance(members, list) or not members:
                self.fail(
                    "memory_abstraction_edges", where, "'members' must be a non-empty list of ids"
                )
            self.abstractions.append(raw)

        entity_ids = {row[0] for row in self.objects if row[1] == "entity"}
        attribute_keys = {(a[0], a[1]) for a in self.attributes}
        for object_id, name, _entity in self.acl:
            if (object_id, name) not in attribute_keys:
                self.fail("attribute_acl", f"{object_id}.{name}", "refers to an unknown attribute")
        for mem in self.memories:
            if mem[1] not in entity_ids:
                self.fail("buffer_entries", f"id={mem[0]}", f"owner {mem[1]!r} is not an entity")


def load_world(path_or_doc: str | Path | dict, *, source: str | None = None) -> ImportReport:
    """Load an omnia scenario JSON (plus our optional layers/memories/abstractions)."""
    if isinstance(path_or_doc, dict):
        doc, source = path_or_doc, source or "<scenario>"
        sha = hashlib.sha256(_js_json(doc).encode()).hexdigest()
    else:
        path = Path(path_or_doc)
        source = source or str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise WorldImportError(source, "-", "-", f"cannot read file ({exc.strerror})") from None
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise WorldImportError(source, "scenario", "-", f"not JSON ({exc})") from None
        sha = hashlib.sha256(raw).hexdigest()
    scenario = _Scenario(doc, source)
    scenario.parse()
    era = "v2" if any('"content"' in mem[4] for mem in scenario.memories) else "v1"
    report = ImportReport(source=source, era=era, worlds=[scenario.world_id])
    world_of = dict.fromkeys((row[0] for row in scenario.objects), scenario.world_id)
    with transaction.atomic():
        marks = bulk.lock_all_shards()
        bulk.check_world_ownership(source, world_of)
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
        if inserted != len(rows):
            _check_scenario_conflicts(
                source, "buffer_entries", [(r[0], r[1]) for r in rows], world_of
            )
        report.counts["buffer_entries"] = inserted
        report.skipped["buffer_entries"] = len(rows) - inserted
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
            existing = LedgerEntry.objects.filter(pk__in=[e["id"] for e in scenario.entries])
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
        bulk.record_source(
            [scenario.world_id], era, "scenario", source, sha, str(doc.get("name") or "")
        )
    return report


def _check_scenario_conflicts(
    source: str, table: str, rows: list[tuple[str, str]], world_of: dict[str, str]
) -> None:
    wanted = dict(rows)
    ids = list(wanted)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join(["%s"] * len(chunk))
        with connection.cursor() as db:
            db.execute(f"SELECT id, owner_id FROM {table} WHERE id IN ({marks})", chunk)
            for entry_id, owner in db.fetchall():
                if owner != wanted[entry_id]:
                    raise WorldImportError(
                        source, table, f"id={entry_id}", f"id already belongs to {owner!r}"
                    )


def _land_abstractions(source: str, abstractions: list[dict[str, Any]]) -> int:
    if not abstractions:
        return 0
    landed = 0
    for i, raw in enumerate(abstractions):
        if LedgerEntry.objects.filter(pk=raw["id"]).exists():
            continue  # a re-load: this rollup already landed
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
