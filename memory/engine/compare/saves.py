"""One viewer in two saves (a playthrough diff): buffer lines only in A, only in B, and read
differently (the merge); alias changes; sessions and episodes added or gone (the stored
projections; a save with unfolded rows says so, or is folded first); leak findings new,
fixed and unchanged (the stored findings, brought up to date first or scanned in memory)."""

from __future__ import annotations

from memory.active_save import use
from memory.engine.compare.merge import diff_buffers, matching_of
from memory.engine.compare.parts import (
    diff_aliases,
    entity,
    fold_or_say,
    named,
    names_in,
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


def diff_sessions(a: Save, b: Save, viewer_id: str) -> ProjectionDiff:
    in_a, in_b = sessions_of(a, viewer_id), sessions_of(b, viewer_id)
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


def diff_episodes(a: Save, b: Save, viewer_id: str) -> ProjectionDiff:
    """Episodes have no id a replay keeps: one is the same when its span and size are."""
    in_a, in_b = _episodes(a, viewer_id), _episodes(b, viewer_id)
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
    viewer_id: str | None = None,
    *,
    refresh: bool = False,
    fold: bool = False,
) -> SavesComparison:
    """The playthrough diff of one viewer (or, with none named, of every viewer both saves
    hold) from save A to save B. `fold` folds a save with unfolded rows first and `refresh`
    brings stored leak findings up to date: both write, so only a command asks for them."""
    a, b = save_named(save_a, "a"), save_named(save_b, "b")
    if a.pk == b.pk:
        raise InvalidInput("compare two different saves (or two viewers with --save)", field="b")
    entities_a, entities_b = _entities(a), _entities(b)
    names = {**names_in(a, entities_a), **names_in(b, entities_b)}
    if viewer_id is not None:
        entity(a, viewer_id, "viewer")
        entity(b, viewer_id, "viewer")
        wanted = [viewer_id]
    else:
        wanted = sorted(set(entities_a) & set(entities_b))
    notices: list[str] = []
    folded = fold_or_say(a, fold=fold, notices=notices)
    folded = fold_or_say(b, fold=fold, notices=notices) and folded
    viewers = []
    for vid in wanted:
        va, vb = viewer_of(entities_a[vid]), viewer_of(entities_b[vid])
        target_names = {
            **names_in(a, va.aliases),
            **names_in(b, vb.aliases),
        }
        viewers.append(
            ViewerDiff(
                viewer=named(names, vid),
                buffer=diff_buffers(a, va, b, vb, matching=matching_of(a, b, vid, vid)),
                aliases=diff_aliases(dict(va.aliases), dict(vb.aliases), target_names),
                sessions=diff_sessions(a, b, vid) if folded else None,
                episodes=diff_episodes(a, b, vid) if folded else None,
                leaks=diff_findings(
                    viewer_findings(a, vid, refresh=refresh),
                    viewer_findings(b, vid, refresh=refresh),
                ),
            )
        )
    if viewer_id is None:
        only_a = sorted(set(entities_a) - set(entities_b))
        only_b = sorted(set(entities_b) - set(entities_a))
    else:
        only_a = only_b = []
    return SavesComparison(
        save_a=a.name,
        save_b=b.name,
        viewers=viewers,
        viewers_only_a=[named(names, v) for v in only_a],
        viewers_only_b=[named(names, v) for v in only_b],
        notices=notices,
    )
