"""Hostile input at every write door, by kind: omnia SQLite files (`import_omnia`), scenario
JSON (`load_world`) and API bodies. Every attempt is generated here; each must be refused with
one line naming file, table/section, row/path and field (exit 2 / a 4xx in the error shape),
with no 5xx or traceback and not one row changed.

One test walks every category, so the table it writes (test-artifacts/hostile-doors.md, one
section per backend) always counts all of them.
"""

from __future__ import annotations

import io
import itertools
import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from memory.worlds import bulk, omnia_import
from memory.worlds.omnia_import import import_omnia
from memory.worlds.scenario import load_world
from tests.helpers import FIXTURES, ROOT, every_table

V2 = FIXTURES / "omnia-head-tavern.sqlite"
TALKING_ROOM = FIXTURES / "omnia-scenario-talking-room-c292626.json"
ARTIFACT = ROOT / "test-artifacts" / "hostile-doors.md"

BUFFER_ID = "mem-bob-1"  # a v2 row with an outcome and a location
LEDGER_ID = "ledger-k3j9x2-1783339200000"
TALKING_ROOM_MEMORY = "ab3f29d2-cf11-4111-9a99-b13c126d123e"
DEEP = "[" * 1000 + "]" * 1000
INTENT = {
    "type": "action",
    "content": "entity@hx[Hex] waits",
    "actorId": "hx",
    "targetIds": [],
    "modifiers": [],
}


def tables() -> list[str]:
    return every_table()


def base_scenario() -> dict:
    """A small valid scenario of its own world; each case breaks one thing in a copy."""
    return {
        "id": "hostile-world",
        "name": "Hostile",
        "startTime": "2026-07-06T12:00:00.000Z",
        "world": {"attributes": [{"name": "weather", "value": "fog", "visibility": "PUBLIC"}]},
        "locations": [{"id": "hx-hall", "parentId": None, "attributes": []}],
        "layers": [{"id": "hx-lore", "title": "Lore", "entries": []}],
        "entities": [
            {
                "id": "hx",
                "locationId": "hx-hall",
                "isAgent": True,
                "layers": ["hx-lore"],
                "attributes": [
                    {
                        "name": "secret",
                        "value": "x",
                        "visibility": "PRIVATE",
                        "allowedEntities": ["hx"],
                    }
                ],
                "aliases": {},
                "memories": [
                    {"id": "hx-note", "slug": "notes/a", "name": "A", "body": "b", "importance": 5}
                ],
                "initialMemories": [
                    {
                        "id": "hx-m1",
                        "timestamp": "2026-07-06T11:00:00.000Z",
                        "locationId": "hx-hall",
                        "conversationId": "c1",
                        "intent": dict(INTENT),
                        "outcome": None,
                    }
                ],
            }
        ],
        "abstractions": [],
    }


def snapshot() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        out = {}
        for table in tables():
            cursor.execute(f"SELECT * FROM {table}")
            out[table] = sorted(map(repr, cursor.fetchall()))
        return out


@dataclass
class Outcome:
    refused_one_line: bool
    crashed: bool  # a 5xx, or a traceback where a refusal was due
    line: str


_CASE = itertools.count(1)


def run_command(name: str, path: Path) -> Outcome:
    # Each hostile file under a save name of its own: a refusal must come from the file,
    # never from a name an earlier case took. (Ids of other saves are no conflict since saves:
    # the cross-world cases that used to be refused are two playthroughs side by side now.)
    try:
        call_command(
            name, str(path), "--as", f"case-{next(_CASE)}", stdout=io.StringIO(),
            stderr=io.StringIO(),
        )  # fmt: skip
    except CommandError as exc:
        line = str(exc)
        return Outcome(exc.returncode == 2 and "\n" not in line, False, line)
    except Exception as exc:  # exactly what this suite counts
        return Outcome(False, True, f"{type(exc).__name__}: {exc}")
    return Outcome(False, False, "accepted")


# --- omnia SQLite files ---------------------------------------------------------------------


def sqlite_case(*statements: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "world.sqlite"
        shutil.copy(V2, path)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA foreign_keys=OFF")
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()
        return path

    return make


def without_primary_key(table: str, *then: str) -> tuple[str, ...]:
    """The table again without its primary key (a file omnia did not make), then `then`."""
    return (
        f"CREATE TABLE copy AS SELECT * FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE copy RENAME TO {table}",
        *then,
    )


B = f"WHERE id='{BUFFER_ID}'"
BUFFER = f"table buffer_entries, row id={BUFFER_ID}"
ALICE = "table objects, row id=alice"
LEDGER = f"table ledger_entries, row id={LEDGER_ID}"

FILE_CASES: list[tuple[str, str, Callable[[Path], Path], str]] = [
    # (category, what, the file, the words the refusal must hold after "<file>: ")
    ("file: mistyped column", "pinned='abc'", sqlite_case(f"UPDATE buffer_entries SET pinned='abc' {B}"), f"{BUFFER}: pinned must be an integer, not 'abc'"),
    ("file: mistyped column", "pinned overflow", sqlite_case(f"UPDATE buffer_entries SET pinned={2**40} {B}"), f"{BUFFER}: pinned {2**40} is not 0–1"),
    ("file: mistyped column", "pinned underflow", sqlite_case(f"UPDATE buffer_entries SET pinned={-2**40} {B}"), f"{BUFFER}: pinned {-2**40} is not 0–1"),
    ("file: mistyped column", "is_agent='yes'", sqlite_case("UPDATE objects SET is_agent='yes' WHERE id='alice'"), f"{ALICE}: is_agent must be an integer, not 'yes'"),
    ("file: mistyped column", "is_agent overflow", sqlite_case(f"UPDATE objects SET is_agent={2**62} WHERE id='alice'"), f"{ALICE}: is_agent {2**62} is not 0–1"),
    ("file: mistyped column", "importance overflow", sqlite_case(f"UPDATE ledger_entries SET importance={2**40} WHERE id='{LEDGER_ID}'"), f"{LEDGER}: importance {2**40} is not 1–10"),
    ("file: mistyped column", "importance='high'", sqlite_case(f"UPDATE ledger_entries SET importance='high' WHERE id='{LEDGER_ID}'"), f"{LEDGER}: importance must be an integer, not 'high'"),
    ("file: mistyped column", "BLOB aliases_json", sqlite_case("UPDATE objects SET aliases_json=CAST(aliases_json AS BLOB) WHERE id='alice'"), f"{ALICE}: aliases_json must be text, not a BLOB"),
    ("file: mistyped column", "BLOB intent_json", sqlite_case(f"UPDATE buffer_entries SET intent_json=CAST(intent_json AS BLOB) {B}"), f"{BUFFER}: intent_json must be text"),
    ("file: mistyped column", "BLOB outcome_json", sqlite_case(f"UPDATE buffer_entries SET outcome_json=CAST(outcome_json AS BLOB) {B}"), f"{BUFFER}: outcome_json must be text or NULL"),
    ("file: mistyped column", "BLOB location_id", sqlite_case(f"UPDATE buffer_entries SET location_id=X'6869' {B}"), f"{BUFFER}: location_id must be text, not a BLOB"),
    ("file: mistyped column", "BLOB id", sqlite_case(f"UPDATE buffer_entries SET id=X'6869' {B}"), "table buffer_entries, row id=b'hi': id must be text, not a BLOB"),
    ("file: mistyped column", "BLOB timestamp", sqlite_case(f"UPDATE buffer_entries SET timestamp=CAST(timestamp AS BLOB) {B}"), f"{BUFFER}: timestamp must be text, not a BLOB"),
    ("file: NUL, bad UTF-8, surrogates", "NUL in attribute value", sqlite_case("UPDATE attributes SET value='a'||char(0)||'b' WHERE object_id='alice' AND name='appearance'"), "table attributes, row object_id=alice, name=appearance: value contains a NUL character"),
    ("file: NUL, bad UTF-8, surrogates", "NUL in location_id", sqlite_case(f"UPDATE buffer_entries SET location_id='a'||char(0) {B}"), f"{BUFFER}: location_id contains a NUL character"),
    ("file: NUL, bad UTF-8, surrogates", "NUL in timestamp", sqlite_case(f"UPDATE buffer_entries SET timestamp=timestamp||char(0) {B}"), f"{BUFFER}: timestamp contains a NUL character"),
    ("file: NUL, bad UTF-8, surrogates", "NUL in object id", sqlite_case("UPDATE objects SET id='ale'||char(0) WHERE id='ale-barrel'", "DELETE FROM attributes WHERE object_id='ale-barrel'"), "table objects, row id='ale\\x00': id contains a NUL character"),
    ("file: NUL, bad UTF-8, surrogates", "bad UTF-8 in attribute name", sqlite_case("UPDATE attributes SET name=CAST(X'ff41' AS TEXT) WHERE object_id='alice' AND name='appearance'"), "table attributes, row object_id=alice: name is not valid UTF-8 text"),
    ("file: NUL, bad UTF-8, surrogates", "bad UTF-8 in intent_json", sqlite_case(f"UPDATE buffer_entries SET intent_json=CAST(X'7b22ff22' AS TEXT) {B}"), f"{BUFFER}: intent_json is not valid UTF-8 text"),
    ("file: NUL, bad UTF-8, surrogates", "encoded surrogate in a value", sqlite_case("UPDATE attributes SET value=CAST(X'eda080' AS TEXT) WHERE object_id='alice' AND name='appearance'"), "table attributes, row object_id=alice: value is not valid UTF-8 text"),
    ("file: NUL, bad UTF-8, surrogates", "escaped lone surrogate in intent", sqlite_case(f"UPDATE buffer_entries SET intent_json=replace(intent_json, 'Bob hides', '\\ud800 hides') {B}"), f"{BUFFER}: intent_json: intent: content contains a lone surrogate"),
    ("file: NUL, bad UTF-8, surrogates", "escaped NUL in intent", sqlite_case(f"UPDATE buffer_entries SET intent_json=replace(intent_json, 'Bob hides', '\\u0000 hides') {B}"), f"{BUFFER}: intent_json: intent: content contains a NUL character"),
    ("file: deep JSON", "aliases_json x1000", sqlite_case(f"UPDATE objects SET aliases_json='{DEEP}' WHERE id='alice'"), f"{ALICE}: aliases_json: nested deeper than 64 levels"),
    ("file: deep JSON", "connections_json x1000", sqlite_case(f"UPDATE objects SET connections_json='{DEEP}' WHERE id='cellar'"), "table objects, row id=cellar: connections_json: nested deeper than 64 levels"),
    ("file: deep JSON", "intent_json x1000", sqlite_case(f"UPDATE buffer_entries SET intent_json='{DEEP}' {B}"), f"{BUFFER}: intent_json: intent: nested deeper than 64 levels"),
    ("file: deep JSON", "outcome_json x1000", sqlite_case(f"UPDATE buffer_entries SET outcome_json='{DEEP}' {B}"), f"{BUFFER}: outcome_json: outcome: nested deeper than 64 levels"),
    ("file: deep JSON", "quotes_json x1000", sqlite_case(f"UPDATE ledger_entries SET quotes_json='{DEEP}' WHERE id='{LEDGER_ID}'"), f"{LEDGER}: quotes_json: nested deeper than 64 levels"),
    ("file: NULL ids, columns, duplicates", "NULL buffer id", sqlite_case(f"UPDATE buffer_entries SET id=NULL {B}"), "table buffer_entries, row id=NULL: id must not be NULL"),
    ("file: NULL ids, columns, duplicates", "NULL ledger id", sqlite_case(f"UPDATE ledger_entries SET id=NULL WHERE id='{LEDGER_ID}'"), "table ledger_entries, row id=NULL: id must not be NULL"),
    ("file: NULL ids, columns, duplicates", "missing column", sqlite_case("CREATE TABLE copy AS SELECT id, owner_id, timestamp, location_id, intent_json FROM buffer_entries", "DROP TABLE buffer_entries", "ALTER TABLE copy RENAME TO buffer_entries"), "table buffer_entries, row (every row): column outcome_json missing"),
    ("file: NULL ids, columns, duplicates", "duplicate buffer id", sqlite_case(*without_primary_key("buffer_entries", f"INSERT INTO buffer_entries SELECT * FROM buffer_entries {B}")), f"{BUFFER}: duplicate id"),
    ("file: NULL ids, columns, duplicates", "duplicate object id", sqlite_case(*without_primary_key("objects", "INSERT INTO objects SELECT * FROM objects WHERE id='alice'")), f"{ALICE}: duplicate id"),
    ("file: NULL ids, columns, duplicates", "duplicate ledger id", sqlite_case(*without_primary_key("ledger_entries", f"INSERT INTO ledger_entries SELECT * FROM ledger_entries WHERE id='{LEDGER_ID}'")), f"{LEDGER}: duplicate id"),
]  # fmt: skip


# --- scenario JSON --------------------------------------------------------------------------


def scenario_case(change: Callable[[dict], object]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        doc = base_scenario()
        change(doc)
        path = tmp / "scenario.json"
        path.write_text(json.dumps(doc))
        return path

    return make


def raw_case(text: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "scenario.json"
        path.write_text(text)
        return path

    return make


def raw_case_bytes(data: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "scenario.json"
        path.write_bytes(data)
        return path

    return make


def ent(doc: dict) -> dict:
    return doc["entities"][0]


def mem(doc: dict) -> dict:
    return ent(doc)["initialMemories"][0]


def nested(depth: int) -> object:
    value: object = []
    for _ in range(depth - 1):
        value = [value]
    return value


E0 = "table objects, row entities[0]"
M0 = "table buffer_entries, row entities[0].initialMemories[0] (id=hx-m1)"
OTHER_WORLD = {"id": "other-world"}  # a second scenario: entity ids of its own

SCENARIO_CASES: list[tuple[str, str, Callable[[Path], Path], str]] = [
    ("scenario: coercions", 'allowedEntities: "sj-a"', scenario_case(lambda d: ent(d)["attributes"][0].update(allowedEntities="sj-a")), f"{E0}.attributes[0]: 'allowedEntities' must be a list of ids"),
    ("scenario: coercions", 'withheld: "no"', scenario_case(lambda d: ent(d)["memories"][0].update(withheld="no")), "table ledger_entries, row entities[0].memories[0]: 'withheld' must be true or false, not \"no\""),
    ("scenario: coercions", 'isAgent: "false"', scenario_case(lambda d: ent(d).update(isAgent="false")), f"{E0}: 'isAgent' must be true or false, not \"false\""),
    ("scenario: coercions", "object slug", scenario_case(lambda d: ent(d)["memories"][0].update(slug={"a": 1})), "table ledger_entries, row entities[0].memories[0]: 'slug' must be a non-empty string"),
    ("scenario: coercions", "object rollup slug", scenario_case(lambda d: d["abstractions"].append({"id": "r1", "owner": "hx", "members": ["hx-m1"], "name": "n", "body": "b", "slug": ["x"]})), "table memory_abstraction_edges, row abstractions[0]: 'slug' must be a non-empty string"),
    ("scenario: coercions", "importance: true", scenario_case(lambda d: ent(d)["memories"][0].update(importance=True)), "table ledger_entries, row entities[0].memories[0]: 'importance' must be an integer 1–10"),
    ("scenario: coercions", "numeric attribute value", scenario_case(lambda d: ent(d)["attributes"][0].update(value=5)), f"{E0}.attributes[0]: 'value' must be a string"),
    ("scenario: coercions", "object layer title", scenario_case(lambda d: d["layers"][0].update(title={})), "table memory_layers, row layers[0]: 'title' must be a non-empty string"),
    ("scenario: coercions", 'members: "hx-m1"', scenario_case(lambda d: d["abstractions"].append({"id": "r1", "owner": "hx", "members": "hx-m1", "name": "n", "body": "b"})), "table memory_abstraction_edges, row abstractions[0]: 'members' must be a list of ids"),
    ("scenario: structure", '"world": [...]', scenario_case(lambda d: d.update(world=[1])), "table scenario, row world: 'world' must be an object"),
    ("scenario: structure", '"world": "x"', scenario_case(lambda d: d.update(world="x")), "table scenario, row world: 'world' must be an object"),
    ("scenario: structure", "object locationId", scenario_case(lambda d: ent(d).update(locationId={"id": "hx-hall"})), f"{E0}: 'locationId' must be a non-empty string"),
    ("scenario: structure", "object parentId", scenario_case(lambda d: d["locations"][0].update(parentId={"id": "x"})), "table objects, row locations[0]: 'parentId' must be a non-empty string"),
    ("scenario: structure", "object conversationId", scenario_case(lambda d: mem(d).update(conversationId={"c": 1})), "table buffer_entries, row entities[0].initialMemories[0]: 'conversationId' must be a non-empty string"),
    ("scenario: structure", "object memory locationId", scenario_case(lambda d: mem(d).update(locationId=["hx-hall"])), "table buffer_entries, row entities[0].initialMemories[0]: 'locationId' must be a non-empty string"),
    ("scenario: structure", "object timestamp", scenario_case(lambda d: mem(d).update(timestamp={"t": 1})), f"{M0}: 'timestamp' must be an ISO-8601 time string"),
    ("scenario: structure", "duplicate entity layer", scenario_case(lambda d: ent(d).update(layers=["hx-lore", "hx-lore"])), "table memory_layer_subscriptions, row entities[0].layers[1]: layer 'hx-lore' is listed twice"),
    ("scenario: structure", "invalid UTF-8", raw_case_bytes(b'{"id": "hostile-world",\n "name": "\xff"}'), "table scenario, row line 2 column 11: not UTF-8 text"),
    ("scenario: structure", "not JSON", raw_case('{"id": "hostile-world",\n "name": }'), "table scenario, row line 2 column 10: not JSON (Expecting value)"),
    ("scenario: structure", "document nested x1000", raw_case(DEEP), "table scenario, row -: JSON nested deeper than 64 levels"),
    ("scenario: structure", "intent nested x1000", raw_case(json.dumps(base_scenario()).replace('"targetIds": []', f'"targetIds": {DEEP}')), "table scenario, row -: JSON nested deeper than 64 levels"),
    ("scenario: structure", "intent nested x100", scenario_case(lambda d: mem(d)["intent"].update(targetIds=nested(100))), "table scenario, row entities[0].initialMemories[0].intent.targetIds"),
    ("scenario: structure", "lone surrogate in a name", raw_case(json.dumps(base_scenario()).replace('"Hostile"', '"Ho\\ud800stile"')), "table scenario, row name: contains a lone surrogate"),
    ("scenario: structure", "lone surrogate in intent", raw_case(json.dumps(base_scenario()).replace("waits", "wa\\udfffits")), "table scenario, row entities[0].initialMemories[0].intent.content: contains a lone surrogate"),
    ("scenario: structure", "NUL in attribute value", scenario_case(lambda d: ent(d)["attributes"][0].update(value="a\x00b")), "table scenario, row entities[0].attributes[0].value: contains a NUL character"),
    ("scenario: structure", "rollup id of a memory in the file", scenario_case(lambda d: d["abstractions"].append({"id": "hx-m1", "owner": "hx", "members": ["hx-note"], "name": "n", "body": "b"})), "table memory_abstraction_edges, row abstractions[0] (id=hx-m1): duplicate id 'hx-m1'"),
    ("timestamps", "memory time in words", scenario_case(lambda d: mem(d).update(timestamp="yesterday evening")), f"{M0}: 'timestamp' 'yesterday evening' is not an ISO-8601 time with a zone"),
    ("timestamps", "startTime in words", scenario_case(lambda d: d.update(startTime="dawn")), "table scenario, row startTime: 'startTime' 'dawn' is not an ISO-8601 time"),
    ("timestamps", "entry date without time", scenario_case(lambda d: ent(d)["memories"][0].update(timestamp="2026-07-06")), "table ledger_entries, row entities[0].memories[0]: 'timestamp' '2026-07-06' is not an ISO-8601 time"),
    ("timestamps", "no zone", scenario_case(lambda d: mem(d).update(timestamp="2026-07-06T12:00:00")), f"{M0}: 'timestamp' '2026-07-06T12:00:00' is not an ISO-8601 time"),
    ("timestamps", "February 30", scenario_case(lambda d: mem(d).update(timestamp="2026-02-30T12:00:00.000Z")), f"{M0}: 'timestamp' '2026-02-30T12:00:00.000Z' is not an ISO-8601 time"),
]  # fmt: skip


# --- API bodies -----------------------------------------------------------------------------

MEMORIES = "/api/saves/omnia-head-tavern/viewers/alice/memories"
V2_INTENT = {"type": "action", "content": "waits", "actorId": "alice", "targetIds": []}

API_CASES: list[tuple[str, str, str, str | bytes, str]] = [
    # (category, what, url, body (JSON text, or a dict made JSON), the field the 422 names)
    ("api: bodies", "object timestamp", MEMORIES, {"intent": V2_INTENT, "timestamp": {"t": 1}}, "timestamp"),
    ("api: bodies", "object location_id", MEMORIES, {"intent": V2_INTENT, "location_id": {"a": 1}}, "location_id"),
    ("api: bodies", "numeric conversation_id", MEMORIES, {"intent": V2_INTENT, "conversation_id": 5}, "conversation_id"),
    ("api: bodies", "string targetIds", MEMORIES, {"intent": {**V2_INTENT, "targetIds": "bob"}}, "intent"),
    ("api: bodies", "string intent", MEMORIES, {"intent": "waits"}, "intent"),
    ("api: bodies", "NUL in conversation_id", MEMORIES, {"intent": V2_INTENT, "conversation_id": "a\x00"}, "conversation_id"),
    ("api: bodies", "NUL in intent text", MEMORIES, {"intent": {**V2_INTENT, "content": "a\x00"}}, "intent"),
    ("api: bodies", "lone surrogate in intent", MEMORIES, '{"intent": {"type": "action", "content": "\\ud800", "actorId": "alice", "targetIds": []}}', "intent"),
    ("api: bodies", "lone surrogate in location_id", MEMORIES, '{"intent": {"type": "action", "content": "w", "actorId": "alice", "targetIds": []}, "location_id": "\\udc00"}', "location_id"),
    ("api: bodies", "intent nested x100", MEMORIES, {"intent": {**V2_INTENT, "targetIds": nested(100)}}, "intent"),
    ("api: bodies", "intent nested x1000", MEMORIES, '{"intent": {"type": "action", "content": "w", "actorId": "alice", "targetIds": ' + DEEP + "}}", "body"),  # the body as a whole: nested deeper than 64 levels
    ("api: bodies", "boolean expected_generation", "/api/saves/omnia-head-tavern/viewers/alice/abstract", {"member_ids": ["mem-alice-1"], "name": "n", "body": "b", "expected_generation": True}, "expected_generation"),
    ("api: bodies", "numeric alias label", "PUT /api/saves/omnia-head-tavern/viewers/alice/aliases/bob", {"label": 5}, "label"),
    ("api: bodies", "lone surrogate in alias label", "PUT /api/saves/omnia-head-tavern/viewers/alice/aliases/bob", '{"label": "x\\ud800"}', "label"),
    ("api: bodies", "NUL in alias label", "PUT /api/saves/omnia-head-tavern/viewers/alice/aliases/bob", {"label": "x\x00"}, "label"),
    ("api: bodies", "lone surrogate in rollup name", "/api/saves/omnia-head-tavern/viewers/alice/abstract", '{"member_ids": ["mem-alice-1"], "name": "\\udc00", "body": "b", "expected_generation": 0}', "name"),
    ("api: bodies", "lone surrogate in rollup member id", "/api/saves/omnia-head-tavern/viewers/alice/abstract", '{"member_ids": ["\\udc00"], "name": "n", "body": "b", "expected_generation": 0}', "member_ids"),
    ("timestamps", "API time in words", MEMORIES, {"intent": V2_INTENT, "timestamp": "yesterday evening"}, "timestamp"),
    ("timestamps", "API time without zone", MEMORIES, {"intent": V2_INTENT, "timestamp": "2026-07-06T12:00:00"}, "timestamp"),
    ("timestamps", "API hour 25", MEMORIES, {"intent": V2_INTENT, "timestamp": "2026-07-06T25:00:00.000Z"}, "timestamp"),
    ("timestamps", "API numeric time", MEMORIES, {"intent": V2_INTENT, "timestamp": 1783339200000}, "timestamp"),
]  # fmt: skip


def write_table(vendor: str, tally: dict[str, Counter]) -> str:
    lines = [
        f"### {vendor}",
        "",
        "| category | attempts | refused with one line | 5xx / traceback | rows changed on refusal |",
        "|---|---:|---:|---:|---:|",
    ]
    for category, counts in tally.items():
        lines.append(
            f"| {category} | {counts['attempts']} | {counts['one_line']} | {counts['crashed']} "
            f"| {counts['rows_changed']} |"
        )
    total = sum(tally.values(), Counter())
    lines.append(
        f"| **all** | {total['attempts']} | {total['one_line']} | {total['crashed']} "
        f"| {total['rows_changed']} |"
    )
    section = "\n".join(lines) + "\n"
    ARTIFACT.parent.mkdir(exist_ok=True)
    sections = {}
    if ARTIFACT.exists():  # keep the other backend's section
        for part in ARTIFACT.read_text().split("\n### ")[1:]:
            name = part.split("\n", 1)[0]
            sections[name] = "### " + part.rstrip("\n") + "\n"
    sections[vendor] = section
    ARTIFACT.write_text(
        "## Hostile input at the write doors (tests/test_hostile_doors.py)\n\n"
        + "\n".join(sections[name] for name in sorted(sections))
    )
    return section


@pytest.mark.django_db
def test_every_hostile_input_is_refused_in_one_line_and_changes_nothing(
    tmp_path, client, django_user_model, monkeypatch
):
    import_omnia(V2)  # tavern-world: alice, bob…
    load_world(TALKING_ROOM)  # talking-room: rows whose ids a file must not take over
    load_world(base_scenario())  # hostile-world, with the layer hx-lore
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)

    tally: dict[str, Counter] = {}
    failures: list[str] = []

    def record(category: str, what: str, outcome: Outcome, expected: str, before: dict) -> None:
        counts = tally.setdefault(category, Counter())
        changed = snapshot() != before
        counts["attempts"] += 1
        counts["one_line"] += outcome.refused_one_line and expected in outcome.line
        counts["crashed"] += outcome.crashed
        counts["rows_changed"] += changed
        if not outcome.refused_one_line or expected not in outcome.line or changed:
            failures.append(f"{category} / {what}: {outcome.line!r} (wanted {expected!r})")

    for i, (category, what, make, expected) in enumerate(FILE_CASES):
        (tmp_path / f"f{i}").mkdir()
        path = make(tmp_path / f"f{i}")
        before = snapshot()
        record(category, what, run_command("import_omnia", path), f"{path}: {expected}", before)

    # The large-import path: the same refusal from inside the validator process.
    monkeypatch.setattr(bulk, "BULK_INDEX_ROWS", 1)
    monkeypatch.setattr(omnia_import, "BATCH", 5)
    (tmp_path / "parallel").mkdir()
    path = sqlite_case(f"UPDATE buffer_entries SET intent_json='{DEEP}' {B}")(tmp_path / "parallel")
    before = snapshot()
    record(
        "file: deep JSON",
        "intent_json x1000 in the validator process",
        run_command("import_omnia", path),
        f"{path}: {BUFFER}: intent_json: intent: nested deeper than 64 levels",
        before,
    )
    monkeypatch.undo()

    for i, (category, what, make, expected) in enumerate(SCENARIO_CASES):
        (tmp_path / f"s{i}").mkdir()
        path = make(tmp_path / f"s{i}")
        before = snapshot()
        record(category, what, run_command("load_world", path), f"{path}: {expected}", before)

    for category, what, url, body, field in API_CASES:
        before = snapshot()
        data = body if isinstance(body, str) else json.dumps(body)
        method, _, path = url.rpartition(" ")
        send = client.put if method == "PUT" else client.post
        r = send(path, data, content_type="application/json")
        shaped = r.headers.get("Content-Type", "").startswith("application/json")
        payload = r.json() if shaped else {}
        one_line = (
            400 <= r.status_code < 500
            and set(payload) == {"detail", "code", "field"}
            and "\n" not in payload["detail"]
        )
        outcome = Outcome(
            one_line, r.status_code >= 500, f"{r.status_code} {payload.get('field')}: {payload}"
        )
        record(category, what, outcome, f"{r.status_code} {field}:", before)

    section = write_table(connection.vendor, tally)
    print("\n" + section)
    assert failures == [], "\n".join(failures)
    total = sum(tally.values(), Counter())
    assert (total["attempts"], total["crashed"], total["rows_changed"]) == (
        len(FILE_CASES) + 1 + len(SCENARIO_CASES) + len(API_CASES),
        0,
        0,
    )
    # The controls: the untouched inputs are accepted, so each refusal was the one change.
    before = snapshot()
    import_omnia(V2)
    assert snapshot() == before  # a re-import of the clean file: nothing new, no refusal
    r = client.post(MEMORIES, {"intent": V2_INTENT}, content_type="application/json")
    assert r.status_code == 201, r.content


@pytest.mark.django_db
def test_ids_holding_a_slash_pass_the_door(tmp_path):
    """The doors refuse what cannot be stored or shown; "/" can (URLs carry it escaped)."""
    doc = base_scenario()
    doc["entities"][0]["initialMemories"][0]["id"] = "hx/m1"
    doc["entities"][0]["memories"][0]["id"] = "hx/note"
    load_world(doc)
    path = sqlite_case(f"UPDATE buffer_entries SET id='mem/bob/1' {B}")(tmp_path)
    import_omnia(path)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM buffer_entries WHERE id LIKE %s ORDER BY id", ["%/%"])
        assert cursor.fetchall() == [("hx/m1",), ("mem/bob/1",)]
