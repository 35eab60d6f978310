"""One viewer in two saves (a playthrough diff): buffer lines only in A, only in B, and read
differently (the merge); alias changes; sessions and episodes added or gone (the stored
projections; a save with unfolded rows says so, or is folded first); leak findings new,
fixed and unchanged (the stored findings, brought up to date first or scanned in memory)."""

from __future__ import annotations

from memory.active_save import use
from memory.engine.compare.budget import Budget
from memory.engine.compare.merge import diff_buffers, matching_of
from memory.engine.compare.parts import (
    cast_of,
    counterpart,
    diff_aliases,
    entity,
    fold_or_say,
    named,
    names_in,
    pair_people,
    save_named,
    session_refs,
    sessions_of,
)
from memory.engine.compare.results import (
    EpisodeRef,
    FindingItem,
    LeakDiff,
    ProjectionDiff,
    SavesComparison,
    ViewerDiff,
)
from memory.engine.errors import InvalidInput
from memory.engine.knowledge import viewer_of
from memory.engine.leaks import stored
from memory.engine.leaks.accepted import acceptances
from memory.engine.leaks.world_scan import ScanFinding
from memory.models import Episode, ObjectType, Save, WorldObject


def diff_sessions(a: Save, b: Save, viewer_a: str, viewer_b: str) -> ProjectionDiff:
    in_a, in_b = sessions_of(a, viewer_a), sessions_of(b, viewer_b)
    diff = ProjectionDiff()
    diff.added = session_refs(b, [s for k, s in in_b.items() if k not in in_a])
    diff.gone = session_refs(a, [s for k, s in in_a.items() if k not in in_b])
    diff.changed = session_refs(
        b, [s for k, s in in_b.items() if k in in_a and in_a[k].content_hash != s.content_hash]
    )
    diff.same = sum(1 for k, s in in_b.items() if k in in_a) - len(diff.changed)
    return diff


def _episodes(save: Save, owner_id: str) -> list[EpisodeRef]:
    rows = Episode.objects.in_save(save).filter(owner_id=owner_id).order_by("ordinal")
    return [EpisodeRef(e.first_at, e.last_at, int(e.member_count), bool(e.is_open)) for e in rows]


def diff_episodes(a: Save, b: Save, viewer_a: str, viewer_b: str) -> ProjectionDiff:
    """Episodes have no id a replay keeps: one is the same when its span and size are."""
    in_a, in_b = _episodes(a, viewer_a), _episodes(b, viewer_b)
    keys_a, keys_b = set(in_a), set(in_b)
    return ProjectionDiff(
        added=[e for e in in_b if e not in keys_a],
        gone=[e for e in in_a if e not in keys_b],
        same=len(keys_a & keys_b),
    )


def viewer_findings(save: Save, viewer_id: str, *, refresh: bool) -> list[FindingItem]:
    """The viewer's leak findings in `save`: the stored ones, refreshed first when `refresh`
    (a command may write); otherwise stored when current, else scanned in memory (a page
    never writes)."""
    with use(save):
        if refresh:
            stored.refresh([viewer_id])
            found = stored.stored_findings([viewer_id])[viewer_id]
        elif viewer_id in stored.scan_state([viewer_id]).up_to_date:
            found = stored.stored_findings([viewer_id])[viewer_id]
        else:
            found = stored.scan_fresh([viewer_id]).get(viewer_id, [])
        accepted = acceptances([viewer_id])
    return [_finding_item(f, "accepted" if f.key in accepted else "open") for f in found]


def _finding_item(f: ScanFinding, state: str) -> FindingItem:
    g = f.finding
    return FindingItem(
        f.section, g.kind, g.text, g.reason, f.count, state, g.entity_id, g.attribute_name
    )


def diff_findings(in_a: list[FindingItem], in_b: list[FindingItem]) -> LeakDiff:
    """A finding is the same leak in both saves when its section, kind and text are (what an
    acceptance is kept by too)."""

    def key(f: FindingItem) -> tuple[str, str, str]:
        return (f.section, f.kind, f.text)

    keys_a, keys_b = {key(f) for f in in_a}, {key(f) for f in in_b}
    return LeakDiff(
        new=[f for f in in_b if key(f) not in keys_a],
        fixed=[f for f in in_a if key(f) not in keys_b],
        unchanged=[f for f in in_b if key(f) in keys_a],
    )


def _entities(save: Save) -> dict[str, WorldObject]:
    rows = WorldObject.objects.in_save(save).filter(type=ObjectType.ENTITY).order_by("id")
    return {o.id: o for o in rows}


def compare_saves(
    save_a: str,
    save_b: str,
    viewer: str | None = None,
    *,
    refresh: bool = False,
    fold: bool = False,
    budget: Budget | None = None,
) -> SavesComparison:
    """The playthrough diff of one viewer (by id or name; or, with none named, of every
    viewer both saves hold) from save A to save B. A viewer is the same person in both when
    the id is, else when the name (or, nameless, the look) is. `fold` folds a save with
    unfolded rows first and `refresh` brings stored leak findings up to date: both write, so
    only a command asks for them. A `budget` bounds the answer (a page of viewers, a page
    of lines each, a time limit); without one, everything."""
    budget = (budget or Budget.unbounded()).start()
    a, b = save_named(save_a, "a"), save_named(save_b, "b")
    if a.pk == b.pk:
        raise InvalidInput("compare two different saves (or two viewers with --save)", field="b")
    entities_a, entities_b = _entities(a), _entities(b)
    names_a, names_b = names_in(a, entities_a), names_in(b, entities_b)
    names = {**names_b, **names_a}
    pairs = pair_people(
        {i: names_a.get(i, i) for i in entities_a}, {i: names_b.get(i, i) for i in entities_b}
    )
    if viewer is not None:
        obj_a = entity(a, viewer, "viewer")
        obj_b = counterpart(b, obj_a, names.get(obj_a.id, obj_a.id))
        if obj_b is None:
            obj_b = entity(b, viewer, "viewer")
        pairs[obj_a.id] = obj_b.id
        wanted = [obj_a.id]
    else:
        wanted = sorted(pairs, key=lambda i: (names.get(i, i).casefold(), i))
    total = len(wanted)
    page = wanted[budget.viewer_skip :]
    if budget.viewers is not None:
        page = page[: budget.viewers]
    cast = cast_of(a, b, list(entities_a), list(entities_b), pairs)
    notices: list[str] = []
    folded = fold_or_say(a, fold=fold, notices=notices)
    folded = fold_or_say(b, fold=fold, notices=notices) and folded
    viewers = []
    for vid in page:
        if viewers and budget.spent():
            break
        bid = pairs[vid]
        va, vb = viewer_of(entities_a[vid]), viewer_of(entities_b[bid])
        names_b_of = names_in(b, vb.aliases)
        target_names = {**names_b_of, **names_in(a, va.aliases)}
        aliases_b = {cast.who_b(t): label for t, label in dict(vb.aliases).items()}
        viewers.append(
            ViewerDiff(
                viewer=named(names, vid),
                viewer_b=named(names_b, bid) if bid != vid else None,
                buffer=diff_buffers(
                    a, va, b, vb, matching=matching_of(a, b, vid, bid), cast=cast, budget=budget
                ),
                aliases=diff_aliases(dict(va.aliases), aliases_b, target_names),
                sessions=diff_sessions(a, b, vid, bid) if folded else None,
                episodes=diff_episodes(a, b, vid, bid) if folded else None,
                leaks=diff_findings(
                    viewer_findings(a, vid, refresh=refresh),
                    viewer_findings(b, bid, refresh=refresh),
                ),
            )
        )
    if viewer is None:
        paired_b = set(pairs.values())
        only_a = sorted(set(entities_a) - set(pairs))
        only_b = sorted(set(entities_b) - paired_b)
    else:
        only_a = only_b = []
    return SavesComparison(
        save_a=a.name,
        save_b=b.name,
        viewers=viewers,
        viewers_only_a=[named(names_a, v) for v in only_a],
        viewers_only_b=[named(names_b, v) for v in only_b],
        notices=notices,
        viewers_total=total,
        viewers_from=budget.viewer_skip,
    )
