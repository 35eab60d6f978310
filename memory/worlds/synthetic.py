"""Generated omnia saves of a chosen shape, written as the engine writes them: for the
benchmarks (1M rows) and the tests that walk the user's path (a few thousand). Pure standard
library: no Django, so a bench can make its world before any store exists.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from memory.worlds.ddl import OMNIA_V1_DDL, OMNIA_V2_DDL


@dataclass(frozen=True)
class Shape:
    """How a generated omnia save looks. Benches vary it between runs (`--shape`) so that no
    plan or cache is tuned to one generator's habits."""

    rows: int = 1_000_000
    entities: int = 2_000
    hot_rows: int = 100_000  # rows of the one busy viewer (entity 0)
    ids: str = "uuid"  # "uuid" or "readable", for entity and buffer ids
    era: str = "head"  # "head": v2 tagged `content`; "v1": description/originalText
    witnesses: int = 5  # up to this many rows (one per witness) per moment
    seed: int = 7
    # The share of moments whose words name someone by their true name ("Sailor 0042"), as
    # an LLM-written line does now and then: a leak in the prompt of every witness but the
    # one named (aliases here are never true names). 0 writes the same world as before it.
    leaks: float = 0.0

    @classmethod
    def named(cls, name: str, **overrides) -> Shape:
        """The shapes the benches run: `uuid-head` (uuid ids, omnia head's tagged content, up
        to 5 witnesses), `readable-v1` (readable ids, the first era's plain text, one witness
        in three moments alone)."""
        base = {
            "uuid-head": {"ids": "uuid", "era": "head", "witnesses": 5},
            "readable-v1": {"ids": "readable", "era": "v1", "witnesses": 3, "seed": 11},
        }
        if name not in base:
            raise SystemExit(f"unknown shape {name!r}: one of {', '.join(base)}")
        return cls(**{**base[name], **overrides})


WORDS = [
    "rope",
    "lantern",
    "harbour",
    "tide",
    "anchor",
    "sail",
    "barrel",
    "gull",
    "net",
    "oar",
    "mast",
    "deck",
    "cabin",
    "storm",
    "fog",
    "market",
    "bread",
    "coin",
    "ledger",
    "map",
    "compass",
    "chart",
    "knot",
    "hull",
    "keel",
    "rum",
    "lamp",
    "bell",
    "tower",
    "gate",
]
RARE = ("ferry", "smuggler", "lighthouse")  # each in about 1 % of moments


def _entity_ids(shape: Shape, rng: random.Random) -> list[str]:
    if shape.ids == "uuid":
        return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(shape.entities)]
    return [f"npc-{i:04d}" for i in range(shape.entities)]


def generate_omnia_world(path: Path, shape: Shape) -> dict:
    """Write an omnia SQLite save of `shape` at `path`, as the engine writes one: one buffer
    row per witness of each moment (same timestamp and intent), owners skewed (entity 0 holds
    `hot_rows`, the rest Zipf-like), names learned as aliases. Returns what a bench needs to
    address it (the hot viewer's id, a rare word, an entity the hot viewer names)."""
    rng = random.Random(shape.seed)
    ids = _entity_ids(shape, rng)
    hot = ids[0]
    conn = sqlite3.connect(path)
    conn.executescript(OMNIA_V2_DDL if shape.era == "head" else OMNIA_V1_DDL)
    v2 = shape.era == "head"
    world = "harbour-world"
    obj_cols = "(id, type, world_id, clock_iso, location_id, aliases_json" + (
        ", is_agent)" if v2 else ")"
    )
    marks = "(?, ?, ?, ?, ?, ?" + (", ?)" if v2 else ")")

    def obj(*values):
        return values + ((1,) if v2 else ())

    conn.execute(
        f"INSERT INTO objects {obj_cols} VALUES {marks}",
        obj(world, "world", None, "2026-07-06T12:00:00.000Z", None, None),
    )
    rooms = [f"room-{i}" for i in range(20)]
    for room in rooms:
        conn.execute(
            f"INSERT INTO objects {obj_cols} VALUES {marks}",
            (room, "location", world, None, None, None) + ((None,) if v2 else ()),
        )
    # Each entity knows ~20 others by an alias; the hot viewer knows 300.
    for n, eid in enumerate(ids):
        known = rng.sample(ids, min(300 if n == 0 else 20, len(ids)))
        aliases = [
            [k, f"the {rng.choice(WORDS)} keeper {i}"] for i, k in enumerate(known) if k != eid
        ]
        conn.execute(
            f"INSERT INTO objects {obj_cols} VALUES {marks}",
            obj(eid, "entity", world, None, rng.choice(rooms), json.dumps(aliases)),
        )
        conn.execute(
            "INSERT INTO attributes VALUES (?, 'name', ?, 'PRIVATE')", (eid, f"Sailor {n:04d}")
        )
    weights = [1 / (k + 1) for k in range(1, len(ids))]  # Zipf-like over the rest
    others = ids[1:]
    hot_share = shape.hot_rows / max(shape.rows, 1)
    t0 = 1_783_339_200  # 2026-07-06T12:00:00Z
    cols = "(id, owner_id, timestamp, location_id, intent_json, outcome_json" + (
        ", pinned)" if v2 else ")"
    )
    qmarks = "(?, ?, ?, ?, ?, ?" + (", 0)" if v2 else ")")
    sql = f"INSERT INTO buffer_entries {cols} VALUES {qmarks}"
    written = hot_seen = 0
    moment = 0
    named_by_hot: dict[str, int] = {}
    batch: list[tuple] = []
    while written < shape.rows:
        moment += 1
        k = rng.randint(1, shape.witnesses)
        witnesses = set(rng.choices(others, weights=weights, k=k))
        # The hot viewer witnesses whenever it is behind its share: hot_rows rows in all.
        if hot_seen < hot_share * (written + len(witnesses)):
            witnesses.add(hot)
        actor = rng.choice(sorted(witnesses))
        target = rng.choice(ids)
        words = rng.sample(WORDS, 3)
        if rng.random() < 0.03:
            words[1] = rng.choice(RARE)
        if shape.leaks and rng.random() < shape.leaks:
            words[0] = f"Sailor {rng.randrange(len(ids)):04d}"
        kind = rng.choice(("action", "dialogue", "action", "thought"))
        if not v2 and kind == "thought":
            kind = "action"  # the first era wrote dialogue and action only (its import says so)
        said = " ".join(words)
        if v2:
            if kind == "dialogue":
                content = f'entity@{actor}[I] say "{said.capitalize()}" to entity@{target}[them]'
            else:
                content = f"entity@{actor}[I] {said} near entity@{target}[them]"
            intent = {
                "type": kind,
                "content": content,
                "targetIds": [target],
                "modifiers": [],
                "actorId": actor,
            }
        else:
            intent = {
                "type": kind,
                "originalText": said,
                "description": said,
                "actorId": actor,
                "targetIds": [target],
            }
        text = json.dumps(intent, separators=(",", ":"))
        outcome = '{"isValid":true,"reason":"ok"}' if kind == "action" else None
        ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t0 + moment * 7))
        for w in sorted(witnesses):
            if shape.ids == "uuid":
                row_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            else:
                row_id = f"m{written:09d}"
            row = (row_id, w, ts, rng.choice(rooms), text, outcome)
            batch.append(row)
            written += 1
            if w == hot:
                hot_seen += 1
                for named in (actor, target):
                    if named != hot:
                        named_by_hot[named] = named_by_hot.get(named, 0) + 1
        if len(batch) >= 20_000:
            conn.executemany(sql, batch)
            batch = []
    if batch:
        conn.executemany(sql, batch)
    conn.commit()
    hot_rows = conn.execute("SELECT count(*) FROM buffer_entries WHERE owner_id = ?", (hot,))
    hot_count = hot_rows.fetchone()[0]
    conn.close()
    # A person the hot viewer meets rarely: `uses=` must find few rows among many.
    rare_person = min(named_by_hot, key=lambda k: (named_by_hot[k], k)) if named_by_hot else hot
    return {
        "viewer": hot,
        "viewer_rows": hot_count,
        "rows": written,
        "word": RARE[0],
        "person": rare_person,
        "person_rows": named_by_hot.get(rare_person, 0),
        "entities": len(ids),
        "shape": shape.__dict__,
    }
