"""What a way in answers: a report of what it wrote, or the error that refused it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from memory.engine.errors import InvalidInput


class WorldImportError(InvalidInput):
    """A refused way in, named by file, table and row. Nothing was written."""

    def __init__(self, source: str, table: str, row: str, problem: str) -> None:
        self.source, self.table, self.row, self.problem = source, table, row, problem
        super().__init__(f"{source}: table {table}, row {row}: {problem}", field=table)


@dataclass
class ImportReport:
    source: str
    era: str
    worlds: list[str]
    counts: dict[str, int] = field(default_factory=dict)  # rows inserted per table
    skipped: dict[str, int] = field(default_factory=dict)  # rows already present
    save: str = ""  # the save the rows are in
    title: str = ""  # the scenario's own name for its world, if it gives one
    # The same file was already this save: nothing written (`imported_at`: when it was).
    unchanged: bool = False
    imported_at: datetime | None = None
    # --replace: the save now holds this file; what people made on the old one was carried
    # over where the same ids exist (kept) or could not be (dropped), by kind.
    replaced: bool = False
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    # Seconds spent leaving the planner's statistics current after the rows went in.
    statistics_s: float = 0.0

    @classmethod
    def unchanged_save(cls, save, source: str) -> ImportReport:
        return cls(
            source=source,
            era=save.era,
            worlds=json.loads(save.world_ids_json or "[]"),
            save=save.name,
            title=save.title,
            unchanged=True,
            imported_at=save.imported_at,
        )

    def summary(self) -> str:
        inserted = ", ".join(f"{table} {n}" for table, n in self.counts.items())
        skipped = sum(self.skipped.values())
        return (
            f"{self.source}: world {', '.join(self.worlds)} ({self.era}); inserted {inserted}"
            + (f"; {skipped} rows already present" if skipped else "")
        )
