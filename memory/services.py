"""Writes called by the views, the API and the admin: each in one transaction, each audited."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F, Max, Q

from memory.active_save import use
from memory.engine import audit
from memory.engine.abstract import abstract
from memory.engine.aliases import (
    AliasesJsonError,
    alias_label_problems,
    alias_target_errors,
    dump_aliases_json,
    parse_aliases_json,
)
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.knowledge import true_names
from memory.engine.leaks import accepted as accepted_leaks
from memory.engine.leaks import allowed as allowed_leaks
from memory.engine.leaks import stored as leak_findings
from memory.engine.saves import get_save
from memory.engine.upkeep import rebuild_all, run_upkeep, verify_all
from memory.engine.visibility import PRIVATE
from memory.engine.write_door import remember, retract
from memory.models import (
    AliasChange,
    Attribute,
    AttributeAcl,
    BufferEntry,
    LeakAcceptance,
    LeakAllowRule,
    LeakScan,
    ObjectType,
    WorldObject,
)
from memory.selectors import leaks as leak_reads


class AliasRefused(InvalidInput):
    """An alias write refused for its input; nothing was written.

    `by_field` holds every error under the input it blames ("target_id", "label",
    "aliases_json"); `field` is the first of them, `errors` all of them in that order.
    """

    def __init__(self, by_field: dict[str, list[str]]) -> None:
        self.by_field = {f: errs for f, errs in by_field.items() if errs}
        self.errors = [e for errs in self.by_field.values() for e in errs]
        super().__init__("; ".join(self.errors), field=next(iter(self.by_field), None))


class ViewerMissing(NotFound):
    """An alias write for an entity the store does not hold."""


@dataclass
class AliasResult:
    viewer_id: str
    target_id: str
    before: str | None
    after: str | None
    warnings: list[str] = field(default_factory=list)
    changed: bool = True


def world_ids(viewer: WorldObject) -> set[str]:
    world_id = viewer.world_id or viewer.id
    return set(
        WorldObject.objects.filter(Q(id=world_id) | Q(world_id=world_id)).values_list(
            "id", flat=True
        )
    )


def entity_ids_of_world(viewer: WorldObject) -> set[str]:
    world_id = viewer.world_id or viewer.id
    return set(
        WorldObject.objects.filter(world_id=world_id, type=ObjectType.ENTITY).values_list(
            "id", flat=True
        )
    )


def check_alias(
    viewer: WorldObject, target_id: str, label: str
) -> tuple[dict[str, list[str]], list[str]]:
    """({field: errors}, warnings) for this alias, checked against the viewer's world and
    every id held; the errors name the input at fault, "target_id" or "label"."""
    ids = world_ids(viewer)
    target_errors = alias_target_errors(viewer_id=viewer.id, target_id=target_id, all_ids=ids)
    if target_id in ids and target_id not in entity_ids_of_world(viewer):
        target_errors.append(f"target {target_id!r} is not an entity")
    label_errors, warnings = alias_label_problems(label, all_ids=ids)
    stripped = label.strip()
    # Checked before the lookup below: PostgreSQL refuses a NUL in a query parameter.
    control = any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in label)
    if (
        stripped
        and not control
        and stripped not in ids
        and WorldObject.objects.filter(id=stripped).exists()
    ):
        label_errors.append(f"label {label!r} is a system id")
    if not stripped:
        label_errors.append("label must not be empty (delete the alias instead)")
    if control:
        label_errors.append("label contains control characters")
    if len(label) > 200:
        label_errors.append("label is longer than 200 characters")
    # An empty label is refused above, so the engine's "label is empty" warning never shows.
    if stripped and not control and not label_errors:
        warnings += _true_name_warnings(viewer, target_id, stripped)
    return {"target_id": target_errors, "label": label_errors}, warnings


def _true_name_warnings(viewer: WorldObject, target_id: str, label: str) -> list[str]:
    """A label that is another entity's true name is allowed (people are mistaken, and
    namesakes exist) but said: every line about the target will read as that other person."""
    entities = sorted(entity_ids_of_world(viewer) - {target_id})
    folded = label.casefold()
    return [
        f"“{label}” is the true name of {other} ({name}): lines about {target_id} will read "
        f"as if they were about {name}"
        for other, name in sorted(true_names(entities).items())
        if name.strip().casefold() == folded
    ]


def _locked_viewer(viewer_id: str) -> tuple[WorldObject, dict[str, str]]:
    viewer = (
        WorldObject.objects.select_for_update().filter(id=viewer_id, type=ObjectType.ENTITY).first()
    )
    if viewer is None:
        raise ViewerMissing(f"no entity with id {viewer_id!r}", field="viewer_id")
    try:
        aliases = parse_aliases_json(viewer.aliases_json)
    except AliasesJsonError as exc:
        raise AliasRefused(
            {"aliases_json": [f"the viewer's aliases_json is corrupt: {exc}"]}
        ) from None
    return viewer, aliases


def _record(
    viewer_id: str, target_id: str, before: str | None, after: str | None, user, source: str
) -> None:
    actor = user if getattr(user, "is_authenticated", False) else None
    AliasChange.objects.create(
        viewer_id=viewer_id,
        target_id=target_id,
        before=before,
        after=after,
        changed_by=actor,
        source=source,
    )
    audit.record(
        "alias.delete" if after is None else "alias.set",
        f"{viewer_id}->{target_id}",
        actor=user,
        before={"label": before},
        after={"label": after},
    )
    # The viewer's prompt just changed: its stored leak findings follow in this same
    # transaction, so the page the editor lands on is never stale. Marked first: should
    # another worker hold its scan row (and the refresh skip it), it stays behind.
    LeakScan.objects.mark_stale([viewer_id])
    leak_findings.refresh([viewer_id])


def resave_acl_as_omnia(entity_id: str) -> None:
    """The entity's `attribute_acl` rows as omnia's `saveEntity` leaves them (issue 30): it
    saves a changed alias map by saving the whole entity, and for each attribute, in the
    order it loaded them, deletes that attribute's ACL rows and inserts them again (a
    PRIVATE attribute's only; the rest lose theirs), in the order it loaded its allowed ids.
    The rows so land after every other in the file; file_order says so here, for the export
    and the comparison with omnia's own file."""
    attributes = Attribute.objects.filter(object_id=entity_id).order_by(
        F("file_order").asc(nulls_last=True), "name"
    )
    rows = AttributeAcl.objects.filter(object_id=entity_id)
    by_attribute: dict[str, list[str]] = {}
    for name, allowed in rows.order_by(
        F("file_order").asc(nulls_last=True), "attribute_name", "entity_id"
    ).values_list("attribute_name", "entity_id"):
        by_attribute.setdefault(name, []).append(allowed)
    names = [a.name for a in attributes]
    AttributeAcl.objects.filter(object_id=entity_id, attribute_name__in=names).delete()
    last = AttributeAcl.objects.aggregate(last=Max("file_order"))["last"] or 0
    again = []
    for attribute in attributes:
        if attribute.visibility != PRIVATE:
            continue
        for allowed in by_attribute.get(attribute.name, []):
            last += 1
            again.append(AttributeAcl(object_id=entity_id, attribute_name=attribute.name,
                                      entity_id=allowed, file_order=last))  # fmt: skip
    AttributeAcl.objects.bulk_create(again)


def set_alias(
    viewer_id: str, target_id: str, label: str, *, user=None, source: str = ""
) -> AliasResult:
    """Set what `viewer_id` calls `target_id`; refused (AliasRefused) on any validation error.
    `user` is the account, or for a management command its label (audit.cli_actor())."""
    with transaction.atomic():
        viewer, aliases = _locked_viewer(viewer_id)
        errors, warnings = check_alias(viewer, target_id, label)
        if any(errors.values()):
            raise AliasRefused(errors)
        label = label.strip()
        before = aliases.get(target_id)
        if before == label:
            return AliasResult(viewer_id, target_id, before, label, warnings, changed=False)
        aliases[target_id] = label
        viewer.aliases_json = dump_aliases_json(aliases)
        viewer.save(update_fields=["aliases_json"])
        resave_acl_as_omnia(viewer_id)
        _record(viewer_id, target_id, before, label, user, source)
    return AliasResult(viewer_id, target_id, before, label, warnings)


def delete_alias(viewer_id: str, target_id: str, *, user=None, source: str = "") -> AliasResult:
    """Forget `viewer_id`'s alias for `target_id`; deleting an absent alias changes nothing."""
    with transaction.atomic():
        viewer, aliases = _locked_viewer(viewer_id)
        before = aliases.pop(target_id, None)
        if before is None:
            return AliasResult(viewer_id, target_id, None, None, changed=False)
        viewer.aliases_json = dump_aliases_json(aliases)
        viewer.save(update_fields=["aliases_json"])
        resave_acl_as_omnia(viewer_id)
        _record(viewer_id, target_id, before, None, user, source)
    return AliasResult(viewer_id, target_id, before, None)


def restore_alias(viewer_id: str, change_id: int, *, user=None, source: str = "") -> AliasResult:
    """Undo from the history: put back the label one recorded change replaced (forget the
    alias when there was none). Recorded as an ordinary edit, with its own history and audit
    rows, so an undo can itself be undone. A change of another viewer is NotFound."""
    change = AliasChange.objects.filter(pk=change_id, viewer_id=viewer_id).first()
    if change is None:
        raise NotFound(f"{viewer_id} has no alias change #{change_id}", field="change")
    if change.before is None:
        return delete_alias(viewer_id, change.target_id, user=user, source=source)
    return set_alias(viewer_id, change.target_id, change.before, user=user, source=source)


# --- memories through the API: the engine's write door, plus the audit row ------------------


def remember_memory(owner_id: str, *, user=None, **kwargs):
    """memory.engine.write_door.remember and its AuditLog row, in one transaction."""
    with transaction.atomic():
        done = remember(owner_id, **kwargs)
        audit.record(
            "memory.remember",
            f"{owner_id}/{done.entry.id}",
            actor=user,
            after={"intent": done.entry.intent_json, "timestamp": done.entry.timestamp},
        )
    return done


def retract_memory(entry_id: str, *, user=None) -> tuple[BufferEntry, bool]:
    """memory.engine.write_door.retract and its AuditLog row, in one transaction: (the entry,
    whether this call retracted it). Retracting a retracted memory is a no-op: no row."""
    with transaction.atomic():
        # Locked first, so of two concurrent retracts exactly one sees it unretracted.
        was = list(
            BufferEntry.objects.select_for_update()
            .filter(id=entry_id)
            .values_list("retracted_at", flat=True)
        )
        entry = retract(entry_id)
        changed = bool(was) and was[0] is None
        if changed:
            audit.record(
                "memory.retract",
                f"{entry.owner_id}/{entry.id}",
                actor=user,
                after={"retracted_at": entry.retracted_at.isoformat()},
            )
    return entry, changed


# --- projection and abstraction doors ---------------------------------------------------------


def _audit(user, action: str, target: str, after: dict) -> None:
    audit.record(action, target, actor=user, after=after)


def run_cycle(*, user=None) -> dict:
    """One incremental projection cycle over every shard, then the leak findings it moved.
    Audited when it changed something (a cycle with nothing to fold is a no-op)."""
    result = run_upkeep()
    done = {**result.as_dict(), "shards_skipped": list(result.shards_skipped)}
    if audit.cycle_changed(result):
        _audit(user, "projections.cycle", "projections", done)
    return done


def rebuild_projections(*, user=None) -> dict:
    """The full rebuild door: every session, episode and leak finding re-derived."""
    result, _findings = rebuild_all()
    done = {
        "rows_folded": result.rows_folded,
        "sessions": result.sessions,
        "episodes": result.episodes,
    }
    _audit(user, "projections.rebuild", "projections", done)
    return done


def verify_projections() -> dict:
    """Fold everything afresh in memory and compare with the stored rows (writes nothing)."""
    sessions, findings = verify_all()
    return {**sessions.as_dict(), "leak_findings": findings.as_dict()}


def abstract_memories(
    owner_id: str,
    member_ids: list[str],
    *,
    name: str,
    body: str,
    slug: str | None,
    expected_generation: int,
    user=None,
):
    """memory.engine.abstract.abstract and its AuditLog row, in one transaction."""
    with transaction.atomic():
        rollup = abstract(
            owner_id,
            member_ids,
            name=name,
            body=body,
            slug=slug,
            expected_generation=expected_generation,
        )
        _audit(user, "memory.engine.abstract", f"{owner_id}/{rollup.id}", {"members": member_ids})
    return rollup


# --- leak findings: accepted as expected ------------------------------------------------------


def accept_leak(
    viewer_id: str, section: str, kind: str, text: str, reason: str, *, user=None
) -> LeakAcceptance:
    """Record that this finding is expected (reason required), with its audit row. The
    finding must be one of the viewer's current findings."""
    key = (viewer_id, section, kind, text)
    with transaction.atomic():
        done = accepted_leaks.accept(
            leak_reads.find_finding(viewer_id, section, kind, text), key, reason, user=user
        )
        _audit(
            user,
            "leak.accept",
            f"{viewer_id} [{section}] {kind} {text!r}",
            {"reason": done.reason},
        )
    return done


def reopen_leak(viewer_id: str, section: str, kind: str, text: str, *, user=None) -> None:
    """Withdraw an acceptance: the finding counts as a leak again (audited)."""
    with transaction.atomic():
        was = accepted_leaks.reopen((viewer_id, section, kind, text))
        audit.record(
            "leak.reopen",
            f"{viewer_id} [{section}] {kind} {text!r}",
            actor=user,
            before={"reason": was.reason},
        )


# --- leak triage (issue 28 item 1): many findings at once, and allow rules ---------------------

# A finding across saves: (save name, viewer id, section, kind, text).
QueueKey = tuple[str, str, str, str, str]


@dataclass
class BulkResult:
    done: list[QueueKey] = field(default_factory=list)  # changed by this call
    skipped: list[QueueKey] = field(default_factory=list)  # already so: nothing to change


def _by_save(keys: list[QueueKey]) -> dict[str, list[QueueKey]]:
    grouped: dict[str, list[QueueKey]] = {}
    for key in keys:
        grouped.setdefault(key[0], []).append(key)
    return grouped


def accept_leaks(keys: list[QueueKey], reason: str, *, user=None) -> BulkResult:
    """Accept every finding named, with one reason, all or nothing: an unknown save, viewer
    or finding refuses the lot (NotFound) and nothing is written. Already accepted: skipped."""
    result = BulkResult()
    with transaction.atomic():
        for save_name, keyed in _by_save(keys).items():
            with use(get_save(save_name)):
                for key in keyed:
                    try:
                        accept_leak(*key[1:], reason, user=user)
                    except Conflict:
                        result.skipped.append(key)
                    else:
                        result.done.append(key)
    return result


def reopen_leaks(keys: list[QueueKey], *, user=None) -> BulkResult:
    """Withdraw the acceptance of every finding named that has one (the rest: skipped)."""
    result = BulkResult()
    with transaction.atomic():
        for save_name, keyed in _by_save(keys).items():
            with use(get_save(save_name)):
                for key in keyed:
                    if not LeakAcceptance.objects.filter(
                        viewer_id=key[1], section=key[2], kind=key[3], text=key[4]
                    ).exists():
                        result.skipped.append(key)
                        continue
                    reopen_leak(*key[1:], user=user)
                    result.done.append(key)
    return result


def allow_word(
    word: str,
    entity_id: str,
    reason: str,
    *,
    save_name: str = "",
    viewer_id: str = "",
    user=None,
) -> tuple[LeakAllowRule, int]:
    """A rule "this word is fine for this id" (audited); the findings it silences leave the
    store in the same transaction. (rule, findings removed)."""
    with transaction.atomic():
        rule, removed = allowed_leaks.allow(
            word, entity_id, reason, save_name=save_name, viewer_id=viewer_id, user=user
        )
        _audit(
            user,
            "leak.allow",
            f"{rule.word!r} for {rule.entity_id} ({rule.scope})",
            {"rule": rule.pk, "reason": rule.reason, "findings_removed": removed},
        )
    return rule, removed


def revoke_allow_rule(rule_id: int, *, user=None) -> LeakAllowRule:
    """End a rule (audited); the viewers in its scope are rescanned in the same transaction,
    so the findings it silenced are back, open, on the next page."""
    with transaction.atomic():
        rule, saves = allowed_leaks.revoke(rule_id, user=user)
        for save in saves:
            with use(save):
                leak_findings.refresh([rule.viewer_id] if rule.viewer_id else None)
        audit.record(
            "leak.revoke",
            f"{rule.word!r} for {rule.entity_id} ({rule.scope})",
            actor=user,
            before={"rule": rule.pk, "reason": rule.reason},
        )
    return rule


def acceptance_reasons(keys: list[QueueKey]) -> dict[QueueKey, str]:
    """The reason each of these findings is accepted for (those accepted), read before a
    reopen so its undo can accept them again for the same reason."""
    found: dict[QueueKey, str] = {}
    for save_name, keyed in _by_save(keys).items():
        with use(get_save(save_name)):
            for key in keyed:
                row = LeakAcceptance.objects.filter(
                    viewer_id=key[1], section=key[2], kind=key[3], text=key[4]
                ).first()
                if row is not None:
                    found[key] = row.reason
    return found
