"""Planner statistics, kept current by every bulk write.

SQLite has no statistics until something runs ANALYZE, and PostgreSQL's autovacuum gets to a
freshly loaded table late: after an import the planner guesses, and one bad guess (the save's
unique `(game_save_id, id)` index over the owner's time index) turned a 13 ms viewer page into
4.8 s at 1M rows (issue 25). The doors that write in bulk — import, load_world, --replace,
the follower's first load and growth, rebuild, the first cycle after a backlog — call
`refresh_statistics` once their rows are committed, so the store is left as a user would want
it without anyone running ANALYZE by hand.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection

# The omnia tables every world door fills, and the projection tables a fold fills.
WORLD_TABLES = (
    "objects",
    "attributes",
    "attribute_acl",
    "buffer_entries",
    "ledger_entries",
    "ledger_involved_entities",
)
PROJECTION_TABLES = (
    "memory_sessions",
    "memory_session_summaries",
    "memory_episodes",
    "memory_owner_state",
)
LEAK_TABLES = ("memory_leak_scans", "memory_leak_findings")
# A cycle that folded at least this many rows changed the projection tables' shape enough
# to be worth new statistics (the first cycle after an import, a worker catching up).
BULK_ROWS = 50_000
# SQLite reads every row of each index (no `analysis_limit`): a sampled ANALYZE reads the
# first entries of an index, so on a save bigger than the sample it records the sample's size
# as the rows of a save (2,001 of 1,000,000 with a limit of 2,000) and a plan reading the
# whole save looks cheap: a search's lookup of a thousand rows by key read the save's index
# instead (40-110 ms against 2). The whole read of a 1M-row buffer_entries is ~0.6 s, a few
# per cent of its import.


def refresh_statistics(tables: Iterable[str]) -> float:
    """ANALYZE `tables` on the default connection; returns the seconds it took.

    On PostgreSQL, outside a transaction (where every bulk door calls it), VACUUM (ANALYZE):
    rows just loaded are in no page's all-visible bit until autovacuum comes, so each
    index-only scan fetches every heap row it passes (the rebuild's split of the owners read
    500,000 rows of heap for one owner id at 1M rows: 0.75 s, 0.13 s after), and their
    first readers set hint bits. Inside a transaction (a test's) VACUUM cannot run: ANALYZE."""
    names = [t for t in dict.fromkeys(tables) if t.replace("_", "").isalnum()]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA analysis_limit = 0")
            for name in names:
                cursor.execute(f'ANALYZE "{name}"')
        elif names:
            verb = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
            cursor.execute(f"{verb} " + ", ".join(f'"{n}"' for n in names))
    return time.perf_counter() - started


# A table that has grown by this many rows at least, and by as many as it held when its
# statistics were taken, has a new shape: a doubling, never oftener than every 10,000 rows.
GROWTH_MIN_ROWS = 10_000


@dataclass
class Growth:
    """What a long-lived writer (the live follower) added since statistics were last taken:
    `add` says when the table has doubled, so the planner follows a game as it grows."""

    at_statistics: int = 0
    since: int = 0

    def add(self, rows: int) -> bool:
        self.since += rows
        if self.since < max(GROWTH_MIN_ROWS, self.at_statistics):
            return False
        self.at_statistics += self.since
        self.since = 0
        return True
