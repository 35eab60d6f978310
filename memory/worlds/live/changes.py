"""What one look at the followed file found, passed from the reading (source) through the
checks to the writing (apply); plain data, neither Django nor SQLite."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

BATCH_ROWS = 5000  # new rows read per table per batch: bounds one batch's transaction
BUCKET_SHIFT = 10  # rowid buckets of 1,024 when looking for deleted rows
BUCKET_SIZE = 1 << BUCKET_SHIFT
REWIND_ROWS = 1024  # a tail that disagrees further back than this is another game
# Rows at or before the watermark compared with ours per look after a change (rewrites in
# place). Measured on a 100,000-row followed file (SQLite store): the whole sweep costs about
# 4.2 s (the file's rows 0.65 s, ours 2.9 s, the comparison 0.66 s), so a look carries
# about 83 ms of it and a rewrite anywhere in 100,000 rows is found within 51 looks.
SWEEP_ROWS = 2000

# The columns a batch reads of each table, after the rowid: what a row's content is.
COLUMNS = {
    "buffer_entries": (
        "id",
        "owner_id",
        "timestamp",
        "location_id",
        "intent_json",
        "outcome_json",
        "pinned",
    ),
    "ledger_entries": (
        "id",
        "owner_id",
        "timestamp",
        "location_id",
        "content",
        "quotes_json",
        "importance",
        "embedding",
    ),
}


class Replaced(Exception):
    """The file at the path is not the game we were following any more."""


def content(row: tuple | list) -> tuple:
    """A row's columns as comparable values on both sides (PostgreSQL hands a BLOB back as a
    memoryview, SQLite as bytes)."""
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


class Marks(Protocol):
    """How far the file has been applied (the follow's resume state, LiveFollow)."""

    buffer_mark: int
    buffer_mark_id: str
    ledger_mark: int
    ledger_mark_id: str
    involved_mark: int


@dataclass
class Ours:
    """What the inspector holds for one table, read before the file is, so the file's reads
    follow each other closely."""

    held: int = 0  # LiveRow rows at or before the watermark
    tail: list[tuple[int, str]] = field(default_factory=list)  # the last rows, newest first


@dataclass
class TableChanges:
    new: list[tuple] = field(default_factory=list)  # (rowid, *columns)
    deleted: list[tuple[int, str]] = field(default_factory=list)  # (rowid, id)
    rewound_to: int | None = None  # the watermark stepped back (a reused last rowid)
    effective_mark: int = 0  # the watermark the rows were read from
    present_before: int | None = None  # set when rows at or before it went away
    mark: int = 0
    mark_id: str = ""
    more: bool = False  # the batch limit left rows for the next batch
    rewritten: list[tuple] = field(default_factory=list)  # (rowid, *columns): same id, new content
    sweep_next: int | None = None  # where the rewrite sweep goes on; None: it has seen every row


@dataclass
class Changes:
    world_ids: list[str]
    era: str
    small: tuple[list, list, list, dict[str, str]] | None  # objects, attributes, acl, worlds
    small_hash: str
    buffer: TableChanges
    ledger: TableChanges
    involved: list[tuple] = field(default_factory=list)  # (rowid, entry_id, entity_id)
    involved_mark: int = 0
    file_mtime: float = 0.0
    raw_small: tuple = ()  # the small tables as the snapshot read them

    @property
    def empty(self) -> bool:
        return not (
            self.small
            or self.buffer.new
            or self.buffer.deleted
            or self.ledger.new
            or self.ledger.deleted
            or self.involved
            or self.buffer.rewritten
            or self.ledger.rewritten
            or self.buffer.rewound_to is not None
            or self.ledger.rewound_to is not None
        )

    @property
    def more(self) -> bool:
        return self.buffer.more or self.ledger.more


@dataclass
class BatchResult:
    added: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    rewritten: dict[str, int] = field(default_factory=dict)
    objects_synced: bool = False
    replaced: str | None = None
    refolded: int = 0
    cycle_failed: str = ""  # the follow-up's projection cycle raised: why (the save's problem)
    lag_s: float = 0.0
    version: int = 0

    def summary(self) -> str:
        parts = [f"+{n} {t}" for t, n in self.added.items() if n]
        parts += [f"-{n} {t}" for t, n in self.deleted.items() if n]
        parts += [f"{n} {t} rewritten in place" for t, n in self.rewritten.items() if n]
        if self.objects_synced:
            parts.append("objects synced")
        if self.replaced:
            parts.insert(0, f"replaced ({self.replaced})")
        if self.cycle_failed:
            parts.append(self.cycle_failed)
        return ", ".join(parts) or "nothing new"


def hash_rows(*tables: list) -> str:
    """The small tables' content hash: whether they moved since the last batch."""
    digest = hashlib.sha256()
    for rows in tables:
        digest.update(repr(rows).encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()
