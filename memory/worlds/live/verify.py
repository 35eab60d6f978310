"""`follow_omnia PATH --verify`: whether the save holds the followed file's rows, content for
content, not only as many (a row the game rewrote in place keeps every count: issue 29).

The buffer and ledger rows are compared in rowid windows, each row's columns against ours by
id; the involved rows, objects, attributes and ACL rows as sets. Read-only on both sides; the
file is opened per window's statement (source.Patient), as the follower reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memory.active_save import use
from memory.models import Attribute, AttributeAcl, LedgerInvolvedEntity, Save, WorldObject
from memory.worlds.live import apply
from memory.worlds.live.changes import SWEEP_ROWS, content
from memory.worlds.live.source import GameFile

SHOWN = 10  # differences named one by one; the rest are counted


@dataclass
class Verified:
    compared: dict[str, int] = field(default_factory=dict)  # file rows compared, per table
    differences: dict[str, int] = field(default_factory=dict)  # per table
    examples: list[str] = field(default_factory=list)  # the first SHOWN, one line each

    @property
    def clean(self) -> bool:
        return not self.differences

    def differ(self, table: str, what: str) -> None:
        self.differences[table] = self.differences.get(table, 0) + 1
        if len(self.examples) < SHOWN:
            self.examples.append(f"{table}: {what}")


def verify(path: str | Path, save: Save) -> Verified:
    """The file at `path` against `save`, row by row."""
    found = Verified()
    game = GameFile(Path(path).resolve())
    try:
        with use(save):
            tables = ["buffer_entries"]
            if game.schema()["has_ledger"]:
                tables.append("ledger_entries")
            for table in tables:
                _rows(game, save, table, found)
            _sets(game, found, tables)
    finally:
        game.close()
    return found


def _rows(game: GameFile, save: Save, table: str, found: Verified) -> None:
    """Every file row's content against ours by id; then ours that the file does not hold."""
    model = apply.MODELS[table]
    after, held = 0, 0  # held: file rows whose id the save holds
    while True:
        rows = game.rows_between(table, after, 2**63 - 1, SWEEP_ROWS)
        if not rows:
            break
        ours = apply.content_between(save, table, after, rows[-1][0])
        held += len(ours)
        for row in rows:
            if row[1] not in ours:
                found.differ(table, f"id={row[1]} is in the file, not in the save")
            elif ours[row[1]] != content(row[1:]):
                found.differ(table, f"id={row[1]} differs in content")
        after = rows[-1][0]
    found.compared[table] = game.open().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    extra = model.objects.count() - held
    if extra > 0:
        found.differences[table] = found.differences.get(table, 0) + extra
        if len(found.examples) < SHOWN:
            found.examples.append(f"{table}: {extra} row(s) in the save are not in the file")


def _sets(game: GameFile, found: Verified, tables: list[str]) -> None:
    conn = game.open()
    pairs = [
        (
            "objects",
            {row[0] for row in conn.execute("SELECT id FROM objects")},
            set(WorldObject.objects.values_list("id", flat=True)),
        ),
        (
            "attributes",
            set(
                map(
                    tuple, conn.execute("SELECT object_id, name, value, visibility FROM attributes")
                )
            ),
            set(Attribute.objects.values_list("object_id", "name", "value", "visibility")),
        ),
        (
            "attribute_acl",
            set(
                map(
                    tuple,
                    conn.execute("SELECT object_id, attribute_name, entity_id FROM attribute_acl"),
                )
            ),
            set(AttributeAcl.objects.values_list("object_id", "attribute_name", "entity_id")),
        ),
    ]
    if "ledger_entries" in tables:
        pairs.append(
            (
                "ledger_involved_entities",
                set(
                    map(
                        tuple,
                        conn.execute("SELECT entry_id, entity_id FROM ledger_involved_entities"),
                    )
                ),
                set(LedgerInvolvedEntity.objects.values_list("entry_id", "entity_id")),
            )
        )
    for table, theirs, ours in pairs:
        found.compared[table] = len(theirs)
        for item in sorted(theirs ^ ours, key=repr):
            side = "the file" if item in theirs else "the save"
            found.differ(table, f"{item!r} only in {side}")
