"""The leak triage queue (issue 28 item 1): every stored finding of every save in one list,
faceted by save, viewer, kind, word and state, paged by keyset; and the allow rules.

The queue reads the stored findings of viewers whose scan is current (the projection's rows,
never a scan: a page over thousands of findings at 1M rows must not scan a world). Viewers
behind (a write since their last scan) are counted per save, as the overview counts them;
`run_projections` or the save's leak page brings them in. The page and its JSON twin
(/api/triage) both read `queue`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from memory.active_save import among, as_instances, use
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.errors import InvalidInput
from memory.engine.leaks import allowed as allowed_leaks
from memory.engine.leaks import standing
from memory.engine.saves import live_saves
from memory.models import LeakAcceptance, LeakAllowRule, LeakFinding, LeakScan, Save
from memory.selectors import triage_facets as facets
from memory.selectors.triage_facets import FACETS, KIND_WORDS, Facet, QueueFilters
from memory.selectors.viewers import display_names

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
_FINDINGS = LeakFinding._meta.db_table


def _accepted() -> Exists:
    return Exists(
        LeakAcceptance.every_save.filter(
            game_save_id=OuterRef("game_save_id"),
            viewer_id=OuterRef("viewer_id"),
            section=OuterRef("section"),
            kind=OuterRef("kind"),
            text=OuterRef("text"),
        )
    )


def _findings(
    filters: QueueFilters,
    saves: dict[int, Save],
    without: str | None = None,
    *,
    with_state: bool = False,
    listed: bool = False,
) -> QuerySet:
    """The current stored findings of live saves under every filter but `without`; each
    with `accepted` when asked for (or filtered by): a subquery per row, which the facets of
    save, viewer, kind and word do without. `listed`: the current viewers as each save's
    list (one subquery a save) rather than a probe per finding, for a count of every finding
    (SQLite's word facet: 20 -> 12 ms at 20,000 findings); a page of them walks the index."""
    rows = LeakFinding.every_save.filter(game_save_id__in=sorted(saves))
    if listed:
        current = Q()
        for pk in sorted(saves):
            scans = LeakScan.objects.in_save(pk).filter(stale=False)
            current |= Q(game_save_id=pk, viewer_id__in=scans.values("viewer_id"))
        rows = rows.filter(current) if saves else rows.none()
    else:
        rows = rows.filter(
            Exists(
                LeakScan.every_save.filter(
                    game_save_id=OuterRef("game_save_id"),
                    viewer_id=OuterRef("viewer_id"),
                    stale=False,
                )
            )
        )
    given = dict(filters.as_pairs(without))
    if with_state or "state" in given:
        rows = rows.annotate(accepted=_accepted())
    if "save" in given:
        rows = rows.filter(
            game_save_id__in=[pk for pk, s in saves.items() if s.name == given["save"]]
        )
    if "viewer" in given:
        rows = rows.filter(viewer_id=given["viewer"])
    if "kind" in given:
        rows = rows.filter(kind=given["kind"])
    if "word" in given:
        rows = rows.filter(text__iexact=given["word"])
    if "state" in given:
        rows = rows.filter(accepted=given["state"] == "accepted")
    return rows


@dataclass
class QueuePage:
    items: list[dict]
    total: int  # findings under the filters, every page
    open: int
    accepted: int
    next_cursor: str | None
    facets: list[Facet]
    pending: dict[str, int] = field(default_factory=dict)  # save -> viewers not scanned yet


def _cursor_filter(rows: QuerySet, cursor: str | None) -> QuerySet:
    if not cursor:
        return rows
    save_id, viewer_id, ordinal = decode_cursor(cursor, (int, str, int))
    return rows.filter(
        Q(game_save_id__gt=save_id)
        | Q(game_save_id=save_id, viewer_id__gt=viewer_id)
        | Q(game_save_id=save_id, viewer_id=viewer_id, ordinal__gt=ordinal)
    )


def _q(column: str) -> str:
    """A findings column as the page's read names it (quoted: `count` and `end` are words
    of SQL)."""
    return f"f.{connection.ops.quote_name(column)}"


_PAGE_FIELDS = (
    "id", "game_save_id", "viewer_id", "ordinal", "section", "kind", "text", "entity_id",
    "count", "context_before", "context_after", "likely_description",
)  # fmt: skip


# Across the live saves, each named by its id in `where` (the queue lists every save's).
_PAGE_READ = (
    "SELECT {columns}, {accepted} FROM {findings} f "
    "WHERE {where} ORDER BY f.game_save_id, f.viewer_id, f.ordinal LIMIT %s"
)


def _unfiltered_page(saves: dict[int, Save], cursor: str | None, limit: int) -> list:
    """The first `limit` current findings of the live saves past `cursor`, in the queue's
    order, each with `accepted`: the rows _findings(QueueFilters(), saves, with_state=True)
    gives, read raw. The queue opens on this page, and the ORM took 2.2 ms to build the
    statement and make its rows where PostgreSQL answered in 0.5 (20,000 findings)."""
    if not saves:
        return []
    ids, params = among("f.game_save_id", sorted(saves))
    current = (
        f"EXISTS (SELECT 1 FROM {LeakScan._meta.db_table} s WHERE s.game_save_id = "
        "f.game_save_id AND s.viewer_id = f.viewer_id AND NOT s.stale)"
    )
    accepted = (
        f"EXISTS (SELECT 1 FROM {LeakAcceptance._meta.db_table} a "
        "WHERE a.game_save_id = f.game_save_id AND a.viewer_id = f.viewer_id "
        "AND a.section = f.section AND a.kind = f.kind AND a.text = f.text)"
    )
    where = f"{ids} AND {current}"
    if cursor:
        after = decode_cursor(cursor, (int, str, int))
        where += " AND (f.game_save_id, f.viewer_id, f.ordinal) > (%s, %s, %s)"
        params = [*params, *after]
    sql = _PAGE_READ.format(
        columns=", ".join(map(_q, _PAGE_FIELDS)),
        accepted=accepted,
        findings=_FINDINGS,
        where=where,
    )
    with connection.cursor() as read:
        read.execute(sql, [*params, limit])
        rows = read.fetchall()
    found = as_instances(LeakFinding, _PAGE_FIELDS, [row[:-1] for row in rows])
    for finding, row in zip(found, rows, strict=True):
        finding.accepted = bool(row[-1])
    return found


def _names(pairs: set[tuple[int, str]], saves: dict[int, Save]) -> dict[tuple[int, str], str]:
    """Each (save, entity id) by the name its save gives it: one read per save shown."""
    by_save: dict[int, set[str]] = {}
    for save_id, entity_id in pairs:
        by_save.setdefault(save_id, set()).add(entity_id)
    names: dict[tuple[int, str], str] = {}
    for save_id, ids in by_save.items():
        with use(saves[save_id]):
            names.update(((save_id, i), n) for i, n in display_names(sorted(ids)).items())
    return names


def _item(row: LeakFinding, saves: dict[int, Save], names: dict) -> dict:
    save = saves[row.game_save_id]
    return {
        "save": save.name,
        "viewer_id": row.viewer_id,
        "viewer_name": names[(row.game_save_id, row.viewer_id)],
        "section": row.section,
        "kind": row.kind,
        "kind_words": KIND_WORDS.get(row.kind, row.kind),
        "text": row.text,
        "entity_id": row.entity_id,
        "entity_name": names.get((row.game_save_id, row.entity_id)) if row.entity_id else None,
        "count": row.count,
        "context_before": row.context_before,
        "context_after": row.context_after,
        "likely_description": row.likely_description,
        "state": "accepted" if row.accepted else "open",
    }


def _grouped(
    name: str, filters: QueueFilters, saves: dict[int, Save]
) -> tuple[dict[str, int], dict[str, int]]:
    """A facet's counts by the findings (value -> findings) and, for the viewer's, the save
    each viewer is named by (the one with most of its findings)."""
    rows = _findings(filters, saves, without=name, with_state=name == "state", listed=True)
    column = {
        "save": "game_save_id",
        "viewer": "viewer_id",
        "kind": "kind",
        "word": "text",
        "state": "accepted",
    }[name]
    group = ["game_save_id", column] if name == "viewer" else [column]
    counted = rows.values(*group).annotate(n=Count("*"))
    # The viewer's first row names its save (most findings first); the rest sort below.
    counted = counted.order_by("-n", *group) if name == "viewer" else counted.order_by()
    values: dict[str, int] = {}
    viewer_saves: dict[str, int] = {}
    for row in counted:
        raw = row[column]
        if name == "save":
            value = saves[raw].name if raw in saves else str(raw)
        elif name == "state":
            value = "accepted" if raw else "open"
        elif name == "word":
            value = raw.casefold()
        else:
            value = raw
        values[value] = values.get(value, 0) + row["n"]
        if name == "viewer":
            viewer_saves.setdefault(value, row["game_save_id"])
    return values, viewer_saves


def _facet(name: str, filters: QueueFilters, saves: dict[int, Save], names: facets.Names) -> Facet:
    if name == "word" and saves and not filters.as_pairs("word"):
        values, viewer_saves = facets.every_word(saves), {}
    else:
        values, viewer_saves = _grouped(name, filters, saves)
    shown = facets.most(values)
    words: dict[str, str] = {}
    if name == "viewer":
        found = names({(viewer_saves[v], v) for v, _n in shown}, saves)
        words = {v: found[(viewer_saves[v], v)] for v, _n in shown}
    elif name == "kind":
        words = KIND_WORDS
    facet_values = [(v, words.get(v, v), n) for v, n in shown]
    return Facet(name, facet_values, more=len(values) > facets.FACET_VALUES)


def queue(filters: QueueFilters, *, cursor: str | None = None, limit: int = PAGE_SIZE) -> QueuePage:
    """One page of the queue: the findings under `filters` past `cursor`, in (save, viewer,
    the scanner's order), the counts every facet would give, and who is behind per save."""
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE_SIZE}", field="limit")
    saves = {s.pk: s for s in live_saves()}
    rows = _findings(filters, saves, with_state=True)
    # Each save's counts and who is behind there, one read a save: the counts of every save
    # the facets count (without a word, all but the word facet's come from the scan rows'
    # counts), who is behind of those the queue shows.
    shown = [pk for pk in sorted(saves) if filters.save in (None, saves[pk].name)]
    read = {}
    for pk in shown if filters.word else sorted(saves):
        with use(saves[pk]):
            read[pk] = standing.queue_counts()
    if filters.as_pairs():
        ordered = _cursor_filter(rows, cursor).order_by("game_save_id", "viewer_id", "ordinal")
        page = list(ordered[: limit + 1])
    else:  # the queue as it opens
        page = _unfiltered_page(saves, cursor, limit + 1)
    more = len(page) > limit
    page = page[:limit]
    pairs = {(r.game_save_id, r.viewer_id) for r in page}
    pairs |= {(r.game_save_id, r.entity_id) for r in page if r.entity_id}
    known: dict[tuple[int, str], str] = {}

    def named(wanted: set[tuple[int, str]], saves: dict[int, Save]) -> dict:
        """_names of `wanted` and of the page's ids, read together (one read a save, not
        one for the viewer facet and another for the page)."""
        known.update(_names((wanted | pairs) - known.keys(), saves))
        return known

    counted = facets.count_facets(filters, saves, read, named) if filters.word is None else {}
    if not counted:
        states = dict(rows.values_list("accepted").annotate(n=Count("*")).order_by())
    else:  # the state facet's counts (which leave the state filter out), under it if given
        states = {
            state == "accepted": n
            for state, _words, n in counted["state"].values
            if filters.state in (None, state)
        }
    names = named(set(), saves)
    last = page[-1] if page else None
    pending = {saves[pk].name: len(read[pk].behind) for pk in shown if read[pk].behind}
    return QueuePage(
        items=[_item(r, saves, names) for r in page],
        total=states.get(True, 0) + states.get(False, 0),
        open=states.get(False, 0),
        accepted=states.get(True, 0),
        next_cursor=encode_cursor([last.game_save_id, last.viewer_id, last.ordinal])
        if more and last
        else None,
        facets=[
            facets.state_facet(states)
            if name == "state" and filters.state is None  # the counts just read
            else counted[name]
            if name in counted
            else _facet(name, filters, saves, named)
            for name in FACETS
        ],
        pending=pending,
    )


def rules(*, include_revoked: bool = False) -> list[LeakAllowRule]:
    return allowed_leaks.rules(active_only=not include_revoked)


def rule_dict(rule: LeakAllowRule) -> dict:
    return {
        "id": rule.pk,
        "word": rule.word,
        "entity_id": rule.entity_id,
        "save": rule.save_name or None,
        "viewer_id": rule.viewer_id or None,
        "scope": rule.scope,
        "reason": rule.reason,
        "created_by": rule.created_by.get_username() if rule.created_by else None,
        "created_at": rule.created_at.isoformat(),
        "revoked_by": rule.revoked_by.get_username() if rule.revoked_by else None,
        "revoked_at": rule.revoked_at.isoformat() if rule.revoked_at else None,
    }
