"""Stored labels worth a second look across a whole save (issue 28 item 5): the save page's
list and `scan_leaks`' count."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from memory.engine.aliases import (
    MAX_LABEL_CHARS,
    AliasesJsonError,
    label_suspicions,
    parse_aliases_json,
)
from memory.engine.knowledge import every_name_owner
from memory.models import ObjectType, WorldObject


@dataclass(frozen=True)
class SuspiciousLabel:
    viewer_id: str
    target_id: str
    label: str
    reasons: tuple[str, ...]  # aliases.label_suspicions, in words


# The last few answers of suspicious_labels, by the digest of everything they depend on (every
# alias map as stored, every true name): the same store answers from here. On a 2,000-entity
# world the check reads 200,000 labels, three quarters of the save page's time.
_SUSPICIOUS_KEPT: OrderedDict[bytes, tuple[SuspiciousLabel, ...]] = OrderedDict()
_SUSPICIOUS_KEEP = 8


def suspicious_labels() -> list[SuspiciousLabel]:
    """Every stored label of the active save worth a second look (empty, over-long, another
    entity's true name), by viewer then target: the entities' alias maps in one read, the
    save's true names in one more. A corrupt alias map is the aliases panel's to report, not
    counted here."""
    rows = list(
        WorldObject.objects.filter(type=ObjectType.ENTITY)
        .exclude(aliases_json__isnull=True)
        .exclude(aliases_json__in=("", "[]", "{}"))
        .order_by("id")
        .values_list("id", "aliases_json")
    )
    owners = every_name_owner()
    digest = hashlib.blake2b(digest_size=20)
    for viewer_id, text in rows:
        digest.update(f"{len(viewer_id)}:{viewer_id}{len(text)}:".encode())
        digest.update(text.encode("utf-8", "surrogatepass"))
    for name in sorted(owners):
        digest.update(f"{len(name)}:{name}:{','.join(sorted(owners[name]))};".encode())
    key = digest.digest()
    if key in _SUSPICIOUS_KEPT:
        _SUSPICIOUS_KEPT.move_to_end(key)
        return list(_SUSPICIOUS_KEPT[key])
    found = []
    for viewer_id, text in rows:
        try:
            aliases = parse_aliases_json(text)
        except AliasesJsonError:
            continue
        for target_id, label in aliases.items():
            # Most labels are none of the three: said without a call each.
            stripped = label.strip()
            if target_id == viewer_id or (
                stripped and len(label) <= MAX_LABEL_CHARS and stripped not in owners
            ):
                continue
            if reasons := label_suspicions(label, target_id, owners):
                found.append(SuspiciousLabel(viewer_id, target_id, label, reasons))
    _SUSPICIOUS_KEPT[key] = tuple(found)
    while len(_SUSPICIOUS_KEPT) > _SUSPICIOUS_KEEP:
        _SUSPICIOUS_KEPT.popitem(last=False)
    return found
