"""What a way in answers: a report of what it wrote, or the error that refused it."""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def summary(self) -> str:
        inserted = ", ".join(f"{table} {n}" for table, n in self.counts.items())
        skipped = sum(self.skipped.values())
        return (
            f"{self.source}: world {', '.join(self.worlds)} ({self.era}); inserted {inserted}"
            + (f"; {skipped} rows already present" if skipped else "")
        )
