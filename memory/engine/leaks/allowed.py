"""Allow rules (issue 28 item 1): "this word is fine for this id", for one viewer, one save
or every save.

An acceptance says "expected" of one finding in one prompt section; the same word in the next
section, the next viewer or after the next import is a new finding. A rule says it once: the
scanner (`LeakWorld.allowed`, read here for the active save by every scan) never reports a
finding whose folded text and object are a rule's, in the rule's scope, so the finding does
not open again after rescans, imports, `--replace`, the live follower or a rebuild.

Making a rule removes the stored findings it silences in the same transaction (what a rescan
would store: the scanner drops an allowed finding after the overlap winners are chosen, so
nothing else moves), so every page agrees at once. Revoking one marks the viewers in its scope
stale and rescans them: only a scan can tell where the word stands again.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from memory.active_save import current_save, use
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.leaks.scanner import EVERY_VIEWER, fold
from memory.models import LeakAllowRule, LeakFinding, LeakScan, ObjectType, Save, WorldObject

MAX_REASON = 2000
MAX_WORD = 200


def _active_rules(save_name: str) -> Q:
    return Q(revoked_at__isnull=True) & (Q(save_name="") | Q(save_name__iexact=save_name))


def allowed_words() -> dict[tuple[str, str], frozenset[str]]:
    """(folded word, object id) -> the viewers it is allowed for in the active save
    (EVERY_VIEWER among them: all), for the scanner. One small read per world scanned."""
    found: dict[tuple[str, str], set[str]] = {}
    rows = LeakAllowRule.objects.filter(_active_rules(current_save().name))
    for word, entity_id, viewer_id in rows.values_list("word", "entity_id", "viewer_id"):
        found.setdefault((word, entity_id), set()).add(viewer_id or EVERY_VIEWER)
    return {key: frozenset(viewers) for key, viewers in found.items()}


def _saves_in_scope(rule: LeakAllowRule) -> list[Save]:
    saves = Save.objects.live()
    if rule.save_name:
        saves = saves.filter(name__iexact=rule.save_name)
    return list(saves.order_by("pk"))


def _silenced(rule: LeakAllowRule) -> list[int]:
    """Ids of the active save's stored findings the rule silences."""
    rows = LeakFinding.objects.filter(entity_id=rule.entity_id)
    if rule.viewer_id:
        rows = rows.filter(viewer_id=rule.viewer_id)
    return [pk for pk, text in rows.values_list("pk", "text") if fold(text) == rule.word]


def _checked_text(value: str | None, field: str, most: int, what: str) -> str:
    value = (value or "").strip()
    if not value:
        raise InvalidInput(f"{what} is required", field=field)
    if len(value) > most:
        raise InvalidInput(f"{what} is longer than {most} characters", field=field)
    return value


def allow(
    word: str,
    entity_id: str,
    reason: str,
    *,
    save_name: str = "",
    viewer_id: str = "",
    user=None,
) -> tuple[LeakAllowRule, int]:
    """Make a rule and drop the stored findings it silences; (rule, findings removed).
    A viewer scope needs its save; a save named must exist; the object must exist in the
    saves the rule covers (an allow rule for an id nobody has is a typo, refused)."""
    word = fold(_checked_text(word, "word", MAX_WORD, "the word"))
    entity_id = _checked_text(entity_id, "entity_id", MAX_WORD, "the id")
    reason = _checked_text(reason, "reason", MAX_REASON, "a reason")
    save_name = (save_name or "").strip()
    viewer_id = (viewer_id or "").strip()
    if viewer_id and not save_name:
        raise InvalidInput("a rule for one viewer names its save", field="save")
    rule = LeakAllowRule(
        word=word,
        entity_id=entity_id,
        save_name=save_name,
        viewer_id=viewer_id,
        reason=reason,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    saves = _saves_in_scope(rule)
    if save_name and not saves:
        raise NotFound(f"no save named {save_name!r}", field="save")
    if save_name:
        rule.save_name = saves[0].name  # as the save spells it
    removed, holding = 0, 0
    try:
        with transaction.atomic():
            rule.save()
            for save in saves:
                with use(save):
                    if not WorldObject.objects.filter(id=rule.entity_id).exists():
                        continue
                    holding += 1
                    removed += _apply(rule)
            if not holding:
                where = f"save {save_name}" if save_name else "any save"
                raise NotFound(f"no object with id {entity_id!r} in {where}", field="entity_id")
    except IntegrityError:
        raise Conflict(f"{word!r} is already allowed for {entity_id} here", field="word") from None
    return rule, removed


def _apply(rule: LeakAllowRule) -> int:
    """Drop the active save's stored findings the rule silences (its object is here)."""
    if (
        rule.viewer_id
        and not WorldObject.objects.filter(id=rule.viewer_id, type=ObjectType.ENTITY).exists()
    ):
        raise NotFound(f"no viewer with id {rule.viewer_id!r}", field="viewer_id")
    silenced = _silenced(rule)
    if silenced:
        gone = LeakFinding.objects.filter(pk__in=silenced)
        viewers = set(gone.values_list("viewer_id", flat=True))
        gone.delete()
        _recount_kinds(viewers)  # the scan rows count what is left
    return len(silenced)


def _recount_kinds(viewer_ids: Iterable[str]) -> None:
    """Each of these viewers' scan row counts its stored findings by kind again, as a rescan
    writes them (stored._mark_scanned): the rule dropped findings without one."""
    kinds: dict[str, list[str]] = {v: [] for v in viewer_ids}
    for viewer, kind in LeakFinding.objects.filter(viewer_id__in=list(kinds)).values_list(
        "viewer_id", "kind"
    ):
        kinds[viewer].append(kind)
    for viewer, found in kinds.items():
        LeakScan.objects.filter(viewer_id=viewer).update(kinds_json=LeakScan.kinds_json_of(found))


def get_rule(rule_id: int) -> LeakAllowRule:
    rule = LeakAllowRule.objects.filter(pk=rule_id).select_related("created_by").first()
    if rule is None:
        raise NotFound(f"no allow rule {rule_id}", field="rule")
    return rule


def revoke(rule_id: int, *, user=None) -> tuple[LeakAllowRule, list[Save]]:
    """End a rule and mark the viewers in its scope stale (only a rescan can tell where the
    word stands again); (rule, the saves whose viewers the caller rescans). Call it inside a
    transaction with that rescan, so no page sees the findings missing and not yet behind."""
    rule = get_rule(rule_id)
    if rule.revoked_at is not None:
        raise Conflict(f"allow rule {rule_id} is already revoked", field="rule")
    rule.revoked_at = timezone.now()
    rule.revoked_by = user if getattr(user, "is_authenticated", False) else None
    rule.save(update_fields=["revoked_at", "revoked_by"])
    saves = _saves_in_scope(rule)
    for save in saves:
        with use(save):
            LeakScan.objects.mark_stale([rule.viewer_id] if rule.viewer_id else None)
    return rule, saves


def rules(*, active_only: bool = True) -> list[LeakAllowRule]:
    rows = LeakAllowRule.objects.select_related("created_by", "revoked_by")
    if active_only:
        rows = rows.filter(revoked_at__isnull=True)
    return list(rows)
