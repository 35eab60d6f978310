"""A scenario document read strictly, section by section, into rows: the validator of the
scenario input kind. Nothing here touches the database; `scenario.load_world` writes what
this returns, in one transaction.

Longer than most modules on purpose: it is one file format read top to bottom, and splitting
it would scatter the rules of one format over several files.
"""

from __future__ import annotations

import json
from typing import Any

from memory.engine.aliases import AliasesJsonError, dump_aliases_json, parse_aliases_json
from memory.engine.clock import timestamp_problem
from memory.engine.intents import IntentError, parse_intent, parse_outcome
from memory.engine.longterm.names import committed_name
from memory.engine.scopes import home_scope, layer_scope
from memory.worlds.report import WorldImportError
from memory.worlds.validation import VISIBILITIES


def js_json(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Scenario:
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
        self.entity_ids: set[str] = set()

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

    def time(self, obj: dict, key: str, table: str, row: str) -> str:
        """A world time, refused unless omnia could have written it."""
        value = obj.get(key)
        problem = timestamp_problem(value)
        if problem:
            self.fail(table, row, f"{key!r} {problem}")
        return value

    def flag(self, obj: dict, key: str, table: str, row: str, default: bool) -> bool:
        """A JSON boolean: "no", "false" or 0 are not false, they are mistakes."""
        value = obj.get(key, default)
        if not isinstance(value, bool):
            self.fail(table, row, f"{key!r} must be true or false, not {js_json(value)}")
        return value

    def id_list(self, obj: dict, key: str, table: str, row: str) -> list[str]:
        """A list of ids, possibly absent; a string is not a list of its characters."""
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(table, row, f"{key!r} must be a list of ids")
        return value

    def items(self, obj: dict, key: str, table: str, row: str) -> list:
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(table, row, f"{key!r} must be a list")
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
            if not isinstance(value, str):
                self.fail(table, at, "'value' must be a string")
            visibility = attr.get("visibility", "PUBLIC")
            if visibility not in VISIBILITIES:
                self.fail(table, at, f"visibility {visibility!r} is not PUBLIC or PRIVATE")
            if name in names:
                self.fail(table, at, f"duplicate attribute {name!r}")
            names.add(name)
            self.attributes.append((object_id, name, value, visibility))
            for entity_id in self.id_list(attr, "allowedEntities", table, at):
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
        if type(importance) is not int or not 1 <= importance <= 10:
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
                "withheld": self.flag(raw, "withheld", "ledger_entries", where, False),
                "importance": importance,
                "timestamp": (
                    self.time(raw, "timestamp", "ledger_entries", where)
                    if raw.get("timestamp") is not None
                    else self.doc["startTime"]
                ),
            }
        )

    def parse(self) -> None:
        doc = self.doc
        world_id = self.text(doc, "id", "scenario", "id")
        start = self.time(doc, "startTime", "scenario", "startTime")
        self.world_id = world_id
        self.declare(world_id, "id", "objects")
        self.objects.append((world_id, "world", None, start, None, None, None, None))
        for key in ("name", "description"):
            value = doc.get(key)
            if value is not None and not isinstance(value, str):
                self.fail("scenario", key, f"{key!r} must be a string")
            if isinstance(value, str):
                self.attributes.append((world_id, key, value, "PRIVATE"))
        world = doc.get("world")
        if world is not None and not isinstance(world, dict):
            self.fail("scenario", "world", "'world' must be an object")
        self.add_attributes(world_id, (world or {}).get("attributes"), "objects", "world")

        locations = self.items(doc, "locations", "objects", "locations")
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
                    self.text(loc, "parentId", "objects", where, required=False),
                    None,
                    js_json(connections) if connections is not None else None,
                    None,
                )
            )
            self.add_attributes(loc_id, loc.get("attributes"), "objects", where)

        entities = doc.get("entities")
        if not isinstance(entities, list):
            self.fail("objects", "entities", "'entities' must be a list")
        for layer_i, layer in enumerate(self.items(doc, "layers", "memory_layers", "layers")):
            where = f"layers[{layer_i}]"
            if not isinstance(layer, dict):
                self.fail("memory_layers", where, "a layer must be an object")
            layer_id = self.text(layer, "id", "memory_layers", where)
            if any(existing == layer_id for existing, _ in self.layers):
                self.fail("memory_layers", where, f"duplicate layer id {layer_id!r}")
            title = self.text(layer, "title", "memory_layers", where, required=False)
            self.layers.append((layer_id, title or layer_id))
            for j, raw in enumerate(self.items(layer, "entries", "memory_layers", where)):
                self.entry(raw, layer_scope(layer_id), None, f"{where}.entries[{j}]")
        layer_ids = {layer_id for layer_id, _ in self.layers}

        alias_targets: list[tuple[str, str, str]] = []
        for i, ent in enumerate(entities):
            where = f"entities[{i}]"
            if not isinstance(ent, dict):
                self.fail("objects", where, "an entity must be an object")
            ent_id = self.text(ent, "id", "objects", where)
            self.declare(ent_id, where, "objects")
            self.entity_ids.add(ent_id)
            aliases = ent.get("aliases") or {}
            try:
                alias_map = parse_aliases_json(js_json(aliases))
            except AliasesJsonError as exc:
                self.fail("objects", where, f"aliases: {exc}")
            alias_targets += [(where, ent_id, target) for target in alias_map]
            is_agent = self.flag(
                ent, "isAgent" if "isAgent" in ent else "is_agent", "objects", where, True
            )
            self.objects.append(
                (
                    ent_id,
                    "entity",
                    world_id,
                    None,
                    self.text(ent, "locationId", "objects", where, required=False),
                    dump_aliases_json(alias_map),
                    None,
                    1 if is_agent else 0,
                )
            )
            self.add_attributes(ent_id, ent.get("attributes"), "objects", where)
            for j, mem in enumerate(self.items(ent, "initialMemories", "buffer_entries", where)):
                at = f"{where}.initialMemories[{j}]"
                if not isinstance(mem, dict):
                    self.fail("buffer_entries", at, "a memory must be an object")
                mem_id = self.text(mem, "id", "buffer_entries", at)
                self.declare(mem_id, at, "buffer_entries")
                intent = mem.get("intent")
                try:
                    parse_intent(intent if isinstance(intent, dict) else js_json(intent))
                    outcome = mem.get("outcome")
                    if outcome is not None:
                        parse_outcome(outcome)
                except IntentError as exc:
                    self.fail("buffer_entries", f"{at} (id={mem_id})", str(exc))
                self.memories.append(
                    (
                        mem_id,
                        ent_id,
                        self.time(mem, "timestamp", "buffer_entries", f"{at} (id={mem_id})"),
                        self.text(mem, "locationId", "buffer_entries", at, required=False),
                        js_json(intent),
                        js_json(outcome) if outcome is not None else None,
                        self.text(mem, "conversationId", "buffer_entries", at, required=False),
                    )
                )
            subscribed: set[str] = set()
            layers_at = f"{where}.layers"
            for position, layer_id in enumerate(
                self.id_list(ent, "layers", "memory_layer_subscriptions", layers_at)
            ):
                if layer_id in subscribed:
                    self.fail(
                        "memory_layer_subscriptions",
                        f"{where}.layers[{position}]",
                        f"layer {layer_id!r} is listed twice",
                    )
                subscribed.add(layer_id)
                if layer_id not in layer_ids:
                    self.fail(
                        "memory_layer_subscriptions",
                        f"{where}.layers[{position}]",
                        f"unknown layer {layer_id!r}",
                    )
                self.subscriptions.append((ent_id, layer_id, position))
            for j, raw in enumerate(self.items(ent, "memories", "ledger_entries", where)):
                self.entry(raw, home_scope(ent_id), ent_id, f"{where}.memories[{j}]")

        table = "memory_abstraction_edges"
        for i, raw in enumerate(self.items(doc, "abstractions", table, "abstractions")):
            where = f"abstractions[{i}]"
            if not isinstance(raw, dict):
                self.fail(table, where, "an abstraction must be an object")
            for key in ("id", "owner", "name", "body"):
                self.text(raw, key, table, where)
            self.text(raw, "slug", table, where, required=False)
            members = self.id_list(raw, "members", table, where)
            if not members:
                self.fail(table, where, "'members' must be a non-empty list of ids")
            where = f"{where} (id={raw['id']})"
            # Worlds stay in their lane: a rollup's owner is an entity of this scenario (its
            # members are then the owner's own rows, which abstract() checks).
            if raw["owner"] not in self.entity_ids:
                self.fail(
                    table,
                    where,
                    f"owner {raw['owner']!r} is not an entity of world {self.world_id!r}",
                )
            self.declare(raw["id"], where, table)
            self.abstractions.append(raw)

        entity_ids = {row[0] for row in self.objects if row[1] == "entity"}
        object_ids = {row[0] for row in self.objects}
        for where, ent_id, target in alias_targets:
            if target not in object_ids:
                self.fail(
                    "objects",
                    f"{where} (id={ent_id})",
                    f"aliases: target {target!r} is not an object of this scenario",
                )
        attribute_keys = {(a[0], a[1]) for a in self.attributes}
        for object_id, name, _entity in self.acl:
            if (object_id, name) not in attribute_keys:
                self.fail("attribute_acl", f"{object_id}.{name}", "refers to an unknown attribute")
        for mem in self.memories:
            if mem[1] not in entity_ids:
                self.fail("buffer_entries", f"id={mem[0]}", f"owner {mem[1]!r} is not an entity")
