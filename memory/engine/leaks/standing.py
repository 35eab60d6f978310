"""Where each viewer's stored leak findings stand, as the pages read it (PRODUCT §7, §10).

A viewer's findings are *current* when its scan row says so (`LeakScan.stale` false) and
*behind* otherwise (a write since, or never scanned: no row). Every door that changes what a
prompt reads keeps that flag in its own transaction (`LeakScan.objects.mark_stale`: a write
for an owner bumps its generation and marks it, an alias edit marks and rescans its viewer, the
fold marks the owners whose digest moved, the live follower marks the whole save when the
world's small tables change; an import or a rebuild starts with no rows). So a page learns who
is behind from one read of the flags, and reads the findings and open counts of the current
viewers one statement each, never recomputing every viewer's inputs (stored.input_fingerprints,
which the rescan still compares: a door that forgot its mark is rescanned at the next cycle).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from django.db.models import Count, Exists, OuterRef, QuerySet

from memory.active_save import scoped_rows
from memory.engine.knowledge import AGENTS, AGENTS_SQL
from memory.engine.leaks.stored import FINDING_COLUMNS, _finding_of
from memory.engine.leaks.world_scan import ScanFinding
from memory.engine.newest import chunks
from memory.models import LeakAcceptance, LeakFinding, LeakScan, ObjectType, WorldObject


def _viewers(viewer_id: str | None) -> QuerySet:
    """Unasked, the agents (the prompts a scan reads); asked by id, that entity."""
    entities = WorldObject.objects.filter(type=ObjectType.ENTITY)
    return entities.filter(id=viewer_id) if viewer_id is not None else entities.filter(AGENTS)


def _current_scan(viewer=None) -> Exists:
    return Exists(LeakScan.objects.filter(viewer_id=viewer or OuterRef("id"), stale=False))


# The pages' hot statements, as SQL: each is a few milliseconds of the database's time, and
# the ORM took longer than that to build them. The entities read on the (save, type, world,
# id, is_agent) index alone; `who` is the agents (knowledge.AGENTS) or the one entity asked.
_OBJECTS = WorldObject._meta.db_table
_SCANS = LeakScan._meta.db_table
_FINDINGS = LeakFinding._meta.db_table
_ACCEPTANCES = LeakAcceptance._meta.db_table
# A viewer's scan row says its findings are current ({save}, {viewer}: the outer columns).
CURRENT_SCAN = (
    f"EXISTS (SELECT 1 FROM {_SCANS} s WHERE s.game_save_id = {{save}} "
    f"AND s.viewer_id = {{viewer}} AND NOT s.stale)"
)


def _who(viewer_id: str | None) -> tuple[str, list[str]]:
    return (AGENTS_SQL, []) if viewer_id is None else ("o.id = %s", [viewer_id])


@dataclass(frozen=True)
class Standing:
    current: int  # viewers whose stored findings are current
    behind: list[str]  # the others, by id: not scanned since a write, or never

    @property
    def viewers(self) -> int:
        return self.current + len(self.behind)


def _entities_sql(viewer_id: str | None, current: bool | None, what: str) -> tuple[str, list]:
    who, params = _who(viewer_id)
    sql = (
        f"SELECT {what} FROM {_OBJECTS} o WHERE o.game_save_id = %(save)s AND o.type = %s AND {who}"
    )
    if current is not None:
        scan = CURRENT_SCAN.format(save="o.game_save_id", viewer="o.id")
        sql += f" AND {'' if current else 'NOT '}{scan}"
    return sql, [ObjectType.ENTITY.value, *params]


# Every entity (or the one asked) beside its scan row, in one statement: where the viewers
# stand, their stored findings by kind, omnia's flaws and the labels each scan kept are all
# columns of it. A statement each read the save's 2,000 entities and scan rows five times on a
# save's page (4.4 ms of PostgreSQL's time against 2.1, and a round trip each).
# Its last column is the same on every row: whether the save has any acceptance (most have
# none, and then the accepted counts need no statement of their own).
_BOARD = (
    f"SELECT o.id, o.world_id, {AGENTS_SQL}, s.stale IS NOT NULL AND NOT s.stale, "
    "s.kinds_json, COALESCE(s.flaws, 0), CASE WHEN s.labels_json <> '[]' THEN s.labels_json END, "
    f"EXISTS (SELECT 1 FROM {_ACCEPTANCES} a WHERE a.game_save_id = o.game_save_id) "
    f"FROM {_OBJECTS} o LEFT JOIN {_SCANS} s "
    "ON s.game_save_id = o.game_save_id AND s.viewer_id = o.id "
    "WHERE o.game_save_id = %(save)s AND o.type = %s"
)


class BoardRow(NamedTuple):  # a tuple: 2,000 frozen dataclasses took 6 ms to make
    viewer_id: str
    world_id: str | None
    agent: bool  # knowledge.AGENTS: is_agent NULL or not 0
    current: bool  # it has a scan row, not stale
    kinds_json: str | None  # the row's counts by kind, as written
    flaws: int
    labels_json: str | None  # what the scan kept (None: nothing, or no scan)
    accepting: bool  # the save has an acceptance (the same on every row)


@dataclass(frozen=True)
class Board:
    """What the leak pages count, read once a request: the entities of the active save (the
    agents unasked, the one entity asked) with their scan rows' state (`read_board`). Where
    they stand, their counts by kind, the flaws and the labels each scan kept are made of it."""

    viewer_id: str | None
    rows: list[BoardRow]  # every entity of the save (or the one asked), by id

    @cached_property
    def viewers(self) -> list[BoardRow]:
        """The prompts a scan reads: the agents, or the entity asked."""
        return [r for r in self.rows if self.viewer_id is not None or r.agent]

    @cached_property
    def standing(self) -> Standing:
        behind = [r.viewer_id for r in self.viewers if not r.current]
        return Standing(current=len(self.viewers) - len(behind), behind=behind)

    @cached_property
    def world_counts(self) -> dict[str | None, tuple[int, int]]:
        """world -> (its entities, the agents among them): what the knowledge matrix counts
        of each world, when the board holds every entity (none asked)."""
        counts: dict[str | None, list[int]] = {}
        for r in self.rows:
            tally = counts.setdefault(r.world_id, [0, 0])
            tally[0] += 1
            tally[1] += r.agent
        return {world: (n, agents) for world, (n, agents) in counts.items()}

    @property
    def accepting(self) -> bool:
        """Whether the save has any acceptance at all (an empty board: no viewer to ask)."""
        return bool(self.rows) and bool(self.rows[0].accepting)

    def finding_counts(self) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        """finding_counts(viewer_id) of the board's viewers, from its rows."""
        kinds = [(r.viewer_id, r.kinds_json) for r in self.viewers if r.current]
        return _counts_of(kinds, self.viewer_id, of_agents=True, accepting=self.accepting)


def read_board(viewer_id: str | None = None) -> Board:
    """The board of the active save's agents (or of the one entity asked): one statement."""
    sql, params = _BOARD, [ObjectType.ENTITY.value]
    if viewer_id is not None:
        sql, params = f"{sql} AND o.id = %s", [*params, viewer_id]
    # (SQLite answers its truth values as 0 and 1: read as such.)
    rows = list(map(BoardRow._make, scoped_rows(sql, params)))
    # Sorted here (by id, each row's first column): ORDER BY id would walk the (save, id)
    # index, not the entities' one.
    rows.sort()
    return Board(viewer_id=viewer_id, rows=rows)


def standing(viewer_id: str | None = None) -> Standing:
    """How many viewers (of the agents, or the one asked) have current findings, and which
    are behind: one statement, a count of the objects' index and (ids only for those behind)
    a read of it beside the scan rows (read_board's standing, without its 2,000 rows: for the
    pages that need no counts). Sorted here: ORDER BY id would walk the (save, id)
    index."""
    behind_sql, behind_params = _entities_sql(viewer_id, False, "o.id, NULL")
    count_sql, count_params = _entities_sql(viewer_id, None, "NULL, COUNT(*)")
    rows = scoped_rows(f"{count_sql} UNION ALL {behind_sql}", [*count_params, *behind_params])
    viewers = next(n for i, n in rows if i is None)
    behind = sorted(i for i, _n in rows if i is not None)
    return Standing(current=max(viewers - len(behind), 0), behind=behind)


def _current_findings(viewer_id: str | None) -> QuerySet:
    """The stored findings of the viewers whose scan is current (of the agents, or the one
    asked), as a set: the two conditions are checked per finding, never as a list of ids.
    The one viewer asked is named on the findings too: named inside the EXISTS alone, it
    left the planner every finding of the save to read (20,000 for one viewer's prompt) when
    the statistics said a save holds few."""
    found = LeakFinding.objects.filter(
        _current_scan(OuterRef("viewer_id")),
        Exists(_viewers(viewer_id).filter(id=OuterRef("viewer_id"))),
    )
    return found if viewer_id is None else found.filter(viewer_id=viewer_id)


def current_findings(viewer_id: str | None = None) -> dict[str, list[ScanFinding]]:
    """viewer -> its stored findings in its scanner's order, for each current viewer that has
    any (the rest have none)."""
    found: dict[str, list[ScanFinding]] = {}
    rows = _current_findings(viewer_id).order_by("viewer_id", "ordinal")
    for row in rows.values_list(*FINDING_COLUMNS):
        found.setdefault(row[0], []).append(_finding_of(row))
    return found


# What a report sorts and filters its findings by, before it shows a page of them (_finding_of
# for that page alone): the row's key, then as ScanFinding.to_dict names them.
FINDING_KEY_COLUMNS = ("pk", "viewer_id", "section", "kind", "text", "start", "end", "count")


def current_finding_keys(viewer_id: str | None = None) -> list[tuple]:
    """FINDING_KEY_COLUMNS and the world of each stored finding current_findings gives, in its
    order: 20,000 findings are a few small tuples each, not their occurrences and contexts."""
    rows = _current_findings(viewer_id).order_by("viewer_id", "ordinal")
    return list(rows.values_list(*FINDING_KEY_COLUMNS, "world_id"))


def findings_by_key(pks: list[int]) -> dict[int, ScanFinding]:
    """The stored findings of these keys (current_finding_keys' first column), whole."""
    found: dict[int, ScanFinding] = {}
    for chunk in chunks(pks, 500):
        rows = LeakFinding.objects.filter(pk__in=list(chunk))
        for pk, *row in rows.values_list("pk", *FINDING_COLUMNS):
            found[pk] = _finding_of(tuple(row))
    return found


def open_counts(
    viewer_id: str | None = None, *, board: Board | None = None
) -> dict[str, dict[str, int]]:
    """viewer -> kind -> its stored findings no editor accepted, for each current viewer with
    one at least (finding_counts, the accepted taken away); of `board`'s viewers when given."""
    counts, accepted = board.finding_counts() if board else finding_counts(viewer_id)
    for viewer, kinds in accepted.items():
        if viewer not in counts:
            continue
        left = {k: n - kinds.get(k, 0) for k, n in counts[viewer].items() if n > kinds.get(k, 0)}
        if left:
            counts[viewer] = left
        else:
            del counts[viewer]
    return counts


def _kinds_of(text: str) -> dict[str, int] | None:
    """A scan row's counts by kind as written (kind -> a count above 0), None if it is not."""
    try:
        kinds = json.loads(text)
    except ValueError:
        return None
    good = isinstance(kinds, dict) and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in kinds.values()
    )
    return kinds if good else None


def finding_counts(
    viewer_id: str | None = None,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(viewer -> kind -> stored findings, viewer -> kind -> the accepted among them) of each
    current viewer with one at least (of the agents, or the one asked; queue_counts gives
    every current viewer's, as the triage queue lists them): each scan row's count of its
    findings by kind (LeakScan.kinds_json, written with them), and the accepted ones read
    from the acceptances (a few) to their findings. Counting every finding here took 17 ms
    of a save's page at 20,000 findings."""
    return read_board(viewer_id).finding_counts()


class QueueCounts(NamedTuple):
    """What the triage queue reads of one save: finding_counts of every current viewer (not
    the agents alone: the queue lists every stored finding) and the agents behind
    (standing().behind)."""

    counts: dict[str, dict[str, int]]
    accepted: dict[str, dict[str, int]]
    behind: list[str]


def queue_counts() -> QueueCounts:
    """The active save's counts of every current viewer's findings, the accepted among them
    and the agents behind, in one statement (and the accepted findings' own, when the save
    accepts any): the queue read them in three a save (the counts, whether anything is
    accepted, and `standing`, whose count of the agents it never used)."""
    scans = (
        f"SELECT s.viewer_id, s.kinds_json FROM {_SCANS} s WHERE s.game_save_id = %(save)s "
        "AND NOT s.stale AND s.kinds_json <> '{}'"
    )
    # Rows of the three kinds: (viewer, its counts), (an agent behind, NULL), and (NULL, NULL)
    # when the save has an acceptance.
    behind_sql, params = _entities_sql(None, False, "o.id, NULL")
    accepting = (
        f"SELECT NULL, NULL WHERE EXISTS (SELECT 1 FROM {_ACCEPTANCES} a "
        "WHERE a.game_save_id = %(save)s)"
    )
    rows = scoped_rows(f"{scans} UNION ALL {behind_sql} UNION ALL {accepting}", params)
    counts, accepted = _counts_of(
        [(v, k) for v, k in rows if k is not None],
        None,
        of_agents=False,
        accepting=any(v is None for v, _k in rows),
    )
    behind = sorted(v for v, k in rows if k is None and v is not None)
    return QueueCounts(counts=counts, accepted=accepted, behind=behind)


def _counts_of(
    kinds_of: Iterable[tuple[str, str | None]],
    viewer_id: str | None,
    *,
    of_agents: bool,
    accepting: bool,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """finding_counts of (viewer, kinds_json) of the current viewers it counts. `accepting`:
    whether the save has any acceptance (read with the counts: most accept nothing, and then
    the accepted ones need no statement). The counts are read-only: viewers whose rows say
    the same share one dict."""
    # A few dozen distinct texts among 2,000 rows: each parsed once (a copy a viewer was a
    # third of this read).
    parsed: dict[str, dict[str, int] | None] = {}
    counts: dict[str, dict[str, int]] = {}
    unreadable = []
    for viewer, kinds in kinds_of:
        if kinds == "{}":  # the column's default: no finding
            continue
        if kinds not in parsed:
            parsed[kinds] = _kinds_of(kinds)
        if parsed[kinds] is None:
            unreadable.append(viewer)
        else:
            counts[viewer] = parsed[kinds]
    # A row edited by hand into something else: its findings counted (--verify names it).
    for chunk in chunks(unreadable, 500):
        rows = LeakFinding.objects.filter(viewer_id__in=list(chunk)).values_list(
            "viewer_id", "kind"
        )
        for viewer, kind, n in rows.annotate(n=Count("*")).order_by():
            counts.setdefault(viewer, {})[kind] = n
    # Most saves accept nothing: the look at the acceptances spares planning the join (a
    # millisecond of every leak page on PostgreSQL).
    accepted = _accepted(viewer_id, of_agents) if accepting else {}
    return counts, accepted


def _accepted(viewer_id: str | None, of_agents: bool) -> dict[str, dict[str, int]]:
    """viewer -> kind -> its current stored findings an editor accepted."""
    who, params = _who(viewer_id)
    if of_agents:
        agent = (
            f"AND EXISTS (SELECT 1 FROM {_OBJECTS} o WHERE o.game_save_id = %(save)s "
            f"AND o.id = f.viewer_id AND o.type = %s AND {who})"
        )
        params = [ObjectType.ENTITY.value, *params]
    else:
        agent, params = "", []
    accepted_sql = (
        f"SELECT f.viewer_id, f.kind, COUNT(DISTINCT f.id) FROM {_ACCEPTANCES} a "
        f"JOIN {_FINDINGS} f ON f.game_save_id = a.game_save_id AND f.viewer_id = a.viewer_id "
        "AND f.section = a.section AND f.kind = a.kind AND f.text = a.text "
        f"WHERE a.game_save_id = %(save)s "
        f"AND {CURRENT_SCAN.format(save='f.game_save_id', viewer='f.viewer_id')} "
        f"{agent} GROUP BY f.viewer_id, f.kind"
    )
    accepted: dict[str, dict[str, int]] = {}
    for viewer, kind, n in scoped_rows(accepted_sql, params):
        accepted.setdefault(viewer, {})[kind] = int(n)
    return accepted
