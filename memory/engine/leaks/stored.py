"""Leak findings as a stored projection (PRODUCT §7, §10): computed once, kept, and brought up
to date only for the viewers whose inputs changed.

A viewer's prompt (and so its findings) is a function of:
- its world: objects, attributes, ACLs, layers, the clock — changed only by a way in
  (`memory.worlds`), which leaves its mark on the world's source row (sha and time);
- its own aliases and where it stands;
- its own memories and long-term entries — every write bumps its generation;
- its session digest — moved by the projection cycle, which marks the owners it folded stale.

The first three make the *fingerprint* (one query for every viewer); the last is the `stale`
flag. A stored scan is current when its fingerprint matches and it is not stale. `refresh`
rescans exactly the viewers that are not current, each under its own row lock (SKIP LOCKED on
PostgreSQL), so two workers never scan or store one viewer twice. Reads never write: a page
shows stored findings for current viewers and, for a few that are not, a fresh in-memory scan.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory.active_save import among, converted_rows, scoped_cursor, scoped_rows
from memory.engine import fanout
from memory.engine.knowledge import every_name_owner
from memory.engine.leaks import labels
from memory.engine.leaks.scanner import Finding
from memory.engine.leaks.world_scan import ScanFinding, WorldIndexes, scan_groups
from memory.models import LeakFinding, LeakScan, ObjectType, WorldObject

# Viewers rescanned per transaction: bounds how long a refresh holds their rows.
REFRESH_CHUNK = 200
# SQLite refuses statements with too many parameters; ids go in this many at a time.
ID_CHUNK = 500

_FINGERPRINT_SQL = (
    "SELECT o.id, o.world_id, o.aliases_json, o.location_id, w.clock_iso, "
    "s.source_sha256, s.imported_at, g.generation "
    "FROM objects o "
    "LEFT JOIN objects w ON w.game_save_id = o.game_save_id AND w.id = o.world_id "
    "LEFT JOIN memory_saves s ON s.id = o.game_save_id "
    "LEFT JOIN memory_owner_state g ON g.game_save_id = o.game_save_id AND g.owner_id = o.id "
    "WHERE o.game_save_id = %(save)s AND o.type = %s"
)
# What the scanner reads a prompt as, in the fingerprint: a scan stored before prompts held
# omnia's own lines (issue 30) was of other text, so it is not current whatever its inputs.
SCANNED_READING = "omnia-lines-1"
# Unasked, only agents are scanned (knowledge.AGENTS, in SQL); asked by id, any entity.
_AGENTS_SQL = " AND (o.is_agent IS NULL OR o.is_agent <> 0)"


def _chunks(ids: Sequence[str], size: int = ID_CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def input_fingerprints(viewer_ids: Sequence[str] | None = None) -> dict[str, tuple[str, str]]:
    """viewer id -> (world id, fingerprint of everything but the digest its prompt reads)."""
    rows: list[tuple] = []
    with scoped_cursor() as cursor:
        if viewer_ids is None:
            cursor.execute(_FINGERPRINT_SQL + _AGENTS_SQL, [ObjectType.ENTITY.value])
            rows = cursor.fetchall()
        else:
            for chunk in _chunks(list(viewer_ids)):
                ids, params = among("o.id", chunk)
                cursor.execute(f"{_FINGERPRINT_SQL} AND {ids}", [ObjectType.ENTITY.value, *params])
                rows.extend(cursor.fetchall())
    out: dict[str, tuple[str, str]] = {}
    for viewer_id, world_id, *inputs in rows:
        raw = json.dumps(
            [SCANNED_READING, world_id, *(str(v) if v is not None else None for v in inputs)]
        )
        out[viewer_id] = (world_id, hashlib.sha1(raw.encode("utf-8")).hexdigest())
    return out


@dataclass(frozen=True)
class ScanState:
    current: dict[str, tuple[str, str]]  # viewer -> (world, fingerprint) as the store is now
    up_to_date: frozenset[str]  # viewers whose stored findings are current

    @property
    def behind(self) -> list[str]:
        return sorted(v for v in self.current if v not in self.up_to_date)


def scan_state(viewer_ids: Sequence[str] | None = None) -> ScanState:
    current = input_fingerprints(viewer_ids)
    stored: dict[str, tuple[str, bool]] = {}
    scans = LeakScan.objects.values_list("viewer_id", "fingerprint", "stale")
    if viewer_ids is None:
        stored = {v: (fp, stale) for v, fp, stale in scans}
    else:
        for chunk in _chunks(list(viewer_ids)):
            stored.update({v: (fp, s) for v, fp, s in scans.filter(viewer_id__in=chunk)})
    up_to_date = frozenset(v for v, (_world, fp) in current.items() if stored.get(v) == (fp, False))
    return ScanState(current=current, up_to_date=up_to_date)


# The columns a stored finding is read back from, in _finding_of's order: read as tuples, a
# report of 20,000 findings spends no time making model instances it only unpacks.
FINDING_COLUMNS = tuple(
    "viewer_id section kind start end text entity_id reason attribute_name likely_description "  # noqa: SIM905
    "occurrences_json world_id context_before context_after".split()
)


def _finding_of(row: tuple) -> ScanFinding:
    """A stored finding (its FINDING_COLUMNS) as the scanner found it: the columns from
    `kind` to `likely_description` are Finding's fields, in its order."""
    viewer_id, section, occurrences_json, world_id, before, after = *row[:2], *row[10:]
    occurrences = tuple((a, b, source) for a, b, source in json.loads(occurrences_json))
    return ScanFinding(
        viewer_id, section, Finding(*row[2:10]), occurrences, world_id, before, after
    )


# A finding's row as _store_chunk writes it, in these columns (`start` and `end` quoted: SQL
# keywords). Tuples through the cursor's insert_rows (COPY on PostgreSQL): 20,000 findings as
# model instances through bulk_create were 0.7 s of a rebuild.
_ROW_COLUMNS = tuple(
    'viewer_id ordinal section kind "start" "end" text entity_id attribute_name reason world_id '  # noqa: SIM905
    "count source_id occurrences_json context_before context_after likely_description".split()
)


def _row_of(viewer_id: str, ordinal: int, f: ScanFinding) -> tuple:
    found = f.finding
    return (
        viewer_id,
        ordinal,
        f.section,
        found.kind,
        found.start,
        found.end,
        found.text,
        found.entity_id,
        found.attribute_name,
        found.reason,
        f.world_id,
        f.count,
        f.source_id,
        json.dumps([list(o) for o in f.occurrences]),
        f.context_before,
        f.context_after,
        found.likely_description,
    )


def stored_findings(viewer_ids: Iterable[str]) -> dict[str, list[ScanFinding]]:
    """The stored findings of these viewers, each in its scanner's order."""
    wanted = sorted(set(viewer_ids))
    found: dict[str, list[ScanFinding]] = {v: [] for v in wanted}
    # Raw: the leak report's page reads here; the ORM built it in longer than it ran.
    columns = ", ".join(connection.ops.quote_name(c) for c in FINDING_COLUMNS)  # ("end")
    for chunk in _chunks(wanted):
        ids, params = among("viewer_id", chunk)
        sql = f"SELECT {columns} FROM memory_leak_findings WHERE game_save_id = %(save)s AND {ids}"
        rows = scoped_rows(f"{sql} ORDER BY viewer_id, ordinal", params)
        for row in converted_rows(LeakFinding, FINDING_COLUMNS, rows):
            found[row[0]].append(_finding_of(row))
    return found


def scan_fresh(
    viewer_ids: Sequence[str],
    worlds: WorldIndexes | None = None,
    flaws: dict[str, int] | None = None,
) -> dict[str, list[ScanFinding]]:
    """Scan these viewers now, in memory (one knowledge load and one automaton per world,
    kept in `worlds` across a caller's chunks when it hands one in); `flaws`, when handed
    in, gets each viewer's count of omnia's quiet line flaws (the prompts are built anyway)."""
    groups: dict[str | None, list[WorldObject]] = {}
    viewers = WorldObject.objects.filter(id__in=list(viewer_ids), type=ObjectType.ENTITY)
    for obj in viewers.order_by("world_id", "id"):
        groups.setdefault(obj.world_id, []).append(obj)
    scans = scan_groups(groups, worlds=worlds)
    if flaws is not None:
        flaws.update((scan.viewer_id, scan.flaws) for scan in scans)
    return {scan.viewer_id: scan.findings for scan in scans}


@dataclass
class RefreshResult:
    viewers_checked: int = 0
    viewers_scanned: int = 0
    findings_written: int = 0
    skipped: list[str] = field(default_factory=list)  # held by another worker

    def as_dict(self) -> dict[str, int]:
        return {
            "viewers_checked": self.viewers_checked,
            "viewers_scanned": self.viewers_scanned,
            "findings_written": self.findings_written,
        }


def _claim(viewer_ids: Sequence[str], current: dict[str, tuple[str, str]]) -> list[str]:
    """Lock the scan rows of these viewers for this transaction and keep those still behind:
    another worker may have scanned one since we looked (its row then shows the fingerprint)."""
    LeakScan.objects.bulk_create(
        [LeakScan(viewer_id=v, world_id=current[v][0]) for v in viewer_ids], ignore_conflicts=True
    )
    rows = LeakScan.objects.filter(viewer_id__in=list(viewer_ids))
    if connection.vendor == "sqlite":
        # No row locks: a write first takes SQLite's one writer lock before we read.
        rows.update(stale=F("stale"))
    else:
        rows = rows.select_for_update(skip_locked=True)
    return [
        v
        for v, fp, stale in rows.values_list("viewer_id", "fingerprint", "stale")
        if stale or fp != current[v][1]
    ]


_MARK_SCANNED_SQL = (
    f"UPDATE {LeakScan._meta.db_table} SET world_id = %s, fingerprint = %s, stale = %s, "
    "scanned_at = %s, flaws = %s, labels_json = %s, kinds_json = %s "
    "WHERE game_save_id = %(save)s AND viewer_id = %s"
)


def _mark_scanned(
    viewer_ids: Sequence[str],
    current: dict[str, tuple[str, str]],
    flaws: dict[str, int],
    owners: dict[str, set[str]],
    scans: dict[str, list[ScanFinding]],
) -> None:
    """Each scan row current as of now, with its count of omnia's line flaws, its viewer's
    suspicious labels (`owners`: knowledge.every_name_owner) and its findings (`scans`)
    counted by kind: one statement for the chunk (an ORM update per viewer was a query built
    and run 2,000 times in a rebuild)."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    aliases = dict(
        WorldObject.objects.filter(id__in=list(viewer_ids)).values_list("id", "aliases_json")
    )
    with scoped_cursor() as cursor:
        cursor.executemany(
            _MARK_SCANNED_SQL,
            [
                (
                    *current[v],
                    False,
                    now,
                    flaws.get(v, 0),
                    labels.to_json(labels.suspicious_of(v, aliases.get(v), owners)),
                    LeakScan.kinds_json_of(f.finding.kind for f in scans.get(v, ())),
                    v,
                )
                for v in viewer_ids
            ],
        )


# The helper's share of the viewers to scan. This process also stores every chunk, yet an even
# split is the fastest (1M rows, 20,155 findings, PostgreSQL: 3.8 s at a half, 4.4 s at 0.6 or
# 0.45, 4.6-4.9 s at 0.65): storing a chunk is a small part of scanning one.
REFRESH_HELPER_SHARE = 0.5

# What a scan of some viewers gives: each one's findings, and its count of omnia's quiet line
# flaws (issue 30).
Scanned = tuple[dict[str, list[ScanFinding]], dict[str, int]]


def refresh(
    viewer_ids: Sequence[str] | None = None, *, processes: int | None = None
) -> RefreshResult:
    """Rescan and store every viewer (of these, or all) whose stored findings are not current.

    With two `processes` (by default where memory.engine.fanout says a helper would see the
    same rows) and a few chunks to scan, a helper process scans the later half of the viewers
    while this one scans the first; this process stores both, each chunk as it arrives."""
    state = scan_state(viewer_ids)
    result = RefreshResult(viewers_checked=len(state.current))
    behind = state.behind
    owners = every_name_owner() if behind else {}  # one read for every chunk's labels
    worlds: WorldIndexes = {}  # each world read once for all the chunks

    def scan_now(claimed: list[str]) -> Scanned:
        flaws: dict[str, int] = {}
        return scan_fresh(claimed, worlds, flaws), flaws

    if processes is None:
        processes = fanout.processes() if fanout.may_fan_out() else 1
    if processes < 2 or len(behind) < 2 * REFRESH_CHUNK:
        for chunk in _chunks(behind, REFRESH_CHUNK):
            _store_chunk(chunk, state, owners, result, scan_now)
        return result
    middle = round(len(behind) * (1 - REFRESH_HELPER_SHARE))
    with fanout.Beside(lambda: _scanned_chunks(behind[middle:])) as helper:
        for chunk in _chunks(behind[:middle], REFRESH_CHUNK):
            _store_chunk(chunk, state, owners, result, scan_now)
            for their_chunk, scans in helper.ready():
                _store_chunk(their_chunk, state, owners, result, _scanned(scans))
        for their_chunk, scans in helper.rest():
            _store_chunk(their_chunk, state, owners, result, _scanned(scans))
    return result


def _scanned(scanned: Scanned) -> Callable[[list[str]], Scanned]:
    """The scan of a chunk the helper has already scanned: what it found for those claimed."""
    scans, flaws = scanned
    return lambda claimed: ({v: scans[v] for v in claimed}, flaws)


def _scanned_chunks(viewer_ids: list[str]) -> Iterator[tuple[list[str], Scanned]]:
    """A helper's half of a refresh: each chunk of viewers with every viewer's findings and
    flaw count (the parent claims and stores them; one claimed elsewhere is skipped as ever)."""
    worlds: WorldIndexes = {}
    for chunk in _chunks(viewer_ids, REFRESH_CHUNK):
        flaws: dict[str, int] = {}
        scans = scan_fresh(chunk, worlds, flaws)
        yield list(chunk), ({v: scans.get(v, []) for v in chunk}, flaws)


def _store_chunk(
    chunk: Sequence[str],
    state: ScanState,
    owners: dict[str, set[str]],
    result: RefreshResult,
    scan: Callable[[list[str]], Scanned],
) -> None:
    """Claim these viewers, scan the claimed ones (`scan` of them) and store their findings
    and suspicious labels (`owners`: knowledge.every_name_owner), in one transaction."""
    with transaction.atomic():
        claimed = sorted(_claim(chunk, state.current))
        result.skipped.extend(sorted(set(chunk) - set(claimed)))
        if not claimed:
            return
        scans, flaws = scan(claimed)
        LeakFinding.objects.filter(viewer_id__in=claimed).delete()
        rows = [
            _row_of(viewer_id, ordinal, f)
            for viewer_id in claimed
            for ordinal, f in enumerate(scans.get(viewer_id, []))
        ]
        with scoped_cursor() as cursor:
            cursor.insert_rows(LeakFinding._meta.db_table, _ROW_COLUMNS, rows)
        _mark_scanned(claimed, state.current, flaws, owners, scans)
        result.viewers_scanned += len(claimed)
        result.findings_written += len(rows)


@dataclass
class FindingsVerifyResult:
    viewers: int  # viewers whose stored findings are current, and so were compared
    identical: int
    behind: int  # viewers not rescanned since their inputs moved: lag, not drift
    drift: list[dict[str, object]]

    def as_dict(self) -> dict[str, object]:
        return {
            "viewers": self.viewers,
            "identical": self.identical,
            "behind": self.behind,
            "drift": self.drift,
        }


def verify() -> FindingsVerifyResult:
    """Scan afresh every viewer whose stored findings claim to be current, write nothing, and
    compare finding by finding; and each scan row's counts by kind (what the pages count
    from) with the findings stored beside it."""
    state = scan_state()
    current = sorted(state.up_to_date)
    kept = stored_findings(current)
    fresh = scan_fresh(current)
    counted: dict[str, str] = {}
    for chunk in _chunks(current):
        rows = LeakScan.objects.filter(viewer_id__in=chunk).values_list("viewer_id", "kinds_json")
        counted.update(rows)
    drift: list[dict[str, object]] = []
    for viewer_id in current:
        was = [f.to_dict() for f in kept.get(viewer_id, [])]
        now = [f.to_dict() for f in fresh.get(viewer_id, [])]
        if was != now:
            drift.append({"viewer_id": viewer_id, "stored": was, "fresh": now})
        kinds = dict(Counter(f.finding.kind for f in kept.get(viewer_id, [])))
        if json.loads(counted.get(viewer_id) or "{}") != kinds:
            drift.append(
                {"viewer_id": viewer_id, "counted": json.loads(counted[viewer_id]), "stored": kinds}
            )
    return FindingsVerifyResult(
        viewers=len(current),
        identical=len(current) - len(drift),
        behind=len(state.behind),
        drift=drift,
    )
