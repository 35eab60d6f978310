"""abstract(): land a rollup and absorb its members, all or nothing (seed 003, rule 10).

Three facts must agree — the rollup entry exists, every absorbed row (buffer or ledger)
points at it (abstracted_into), and an abstracted_into edge leaves every member — so they are written in
one transaction pinned to the owner's generation. Every write for an owner bumps that
generation; a caller that read the owner at generation G and calls with expected_generation=G
lands only if nothing was written since. A member already absorbed, a member of another owner
or scope, or a stale generation is a conflict, and nothing lands.

The engine does not write the words (body, name): the caller brings them. It owns the landing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils.text import slugify
from ulid import ULID

from memory.engine.clock import iso_now, now_us
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.longterm.names import committed_name
from memory.engine.scopes import home_scope
from memory.engine.shards import bump_generation, world_clock_for
from memory.models import (
    AbstractionEdge,
    BufferEntry,
    LedgerEntry,
    ObjectType,
    OwnerState,
    WorldObject,
)


class AbstractError(InvalidInput):
    """The request itself is wrong (no members, a name missing…); nothing was written."""


class AbstractConflict(Conflict):
    """The store moved under the caller (stale generation, member absorbed or foreign)."""


@dataclass(frozen=True)
class Member:
    id: str
    kind: str  # "buffer" or "ledger"


def _lock_generation(owner_id: str) -> int:
    OwnerState.objects.get_or_create(owner_id=owner_id)
    return OwnerState.objects.select_for_update().get(owner_id=owner_id).generation


def _resolve_members(owner_id: str, member_ids: Sequence[str]) -> list[Member]:
    buffer_rows = {
        row["id"]: row
        for row in BufferEntry.objects.select_for_update()
        .filter(id__in=member_ids)
        .values("id", "owner_id", "abstracted_into")
    }
    ledger_rows = {
        row["id"]: row
        for row in LedgerEntry.objects.select_for_update()
        .filter(id__in=member_ids)
        .values("id", "scope_id", "abstracted_into")
    }
    absorbed = set(
        AbstractionEdge.objects.filter(member_id__in=member_ids).values_list("member_id", flat=True)
    )
    members: list[Member] = []
    for member_id in member_ids:
        if member_id in absorbed:
            raise AbstractConflict(
                f"member {member_id!r} is already absorbed into a rollup", field="member_ids"
            )
        if member_id in buffer_rows:
            row = buffer_rows[member_id]
            if row["owner_id"] != owner_id:
                raise AbstractConflict(
                    f"member {member_id!r} belongs to another owner", field="member_ids"
                )
            if row["abstracted_into"]:
                raise AbstractConflict(
                    f"member {member_id!r} is already absorbed into {row['abstracted_into']!r}",
                    field="member_ids",
                )
            members.append(Member(member_id, "buffer"))
        elif member_id in ledger_rows:
            if ledger_rows[member_id]["scope_id"] != home_scope(owner_id):
                raise AbstractConflict(
                    f"member {member_id!r} lives outside {home_scope(owner_id)!r}",
                    field="member_ids",
                )
            if ledger_rows[member_id]["abstracted_into"]:
                raise AbstractConflict(
                    f"member {member_id!r} is already absorbed into "
                    f"{ledger_rows[member_id]['abstracted_into']!r}",
                    field="member_ids",
                )
            members.append(Member(member_id, "ledger"))
        else:
            raise AbstractConflict(f"member {member_id!r} does not exist", field="member_ids")
    return members


def _write_rollup(
    owner: WorldObject,
    rollup_id: str,
    name: str,
    body: str,
    slug: str | None,
    importance: int,
    created_at: int,
) -> LedgerEntry:
    timestamp = world_clock_for(owner) or iso_now()
    return LedgerEntry.objects.create(
        id=rollup_id,
        owner_id=owner.id,
        timestamp=timestamp,
        location_id=None,
        content=body,
        importance=importance,
        scope_id=home_scope(owner.id),
        slug=slug or slugify(name) or f"rollup-{rollup_id.lower()}",
        name=name,
        created_at=created_at,
    )


def _mark_absorbed(members: Sequence[Member], rollup_id: str) -> int:
    """The per-row mark on every absorbed row, buffer and ledger alike (seed 003, rule 10)."""
    buffer_ids = [m.id for m in members if m.kind == "buffer"]
    ledger_ids = [m.id for m in members if m.kind == "ledger"]
    return BufferEntry.objects.filter(id__in=buffer_ids).update(
        abstracted_into=rollup_id
    ) + LedgerEntry.objects.filter(id__in=ledger_ids).update(abstracted_into=rollup_id)


def _write_edges(members: Sequence[Member], owner_id: str, rollup_id: str, created_at: int) -> None:
    AbstractionEdge.objects.bulk_create(
        AbstractionEdge(
            member_id=m.id,
            member_kind=m.kind,
            rollup_id=rollup_id,
            owner_id=owner_id,
            created_at=created_at,
        )
        for m in members
    )


def abstract(
    owner_id: str,
    member_ids: Sequence[str],
    *,
    name: str,
    body: str,
    slug: str | None = None,
    expected_generation: int,
    rollup_id: str | None = None,
    importance: int = 5,
) -> LedgerEntry:
    """Write the rollup in the owner's home, absorb every member, bump the generation: one
    transaction, or nothing."""
    members_wanted = list(member_ids)
    if not members_wanted:
        raise AbstractError("a rollup needs at least one member", field="member_ids")
    if len(set(members_wanted)) != len(members_wanted):
        raise AbstractError("a member is listed twice", field="member_ids")
    # Trimmed at the door, as omnia's frontmatter parse would (longterm.names).
    name = committed_name(name) or ""
    if not name:
        raise AbstractError("a rollup needs a name", field="name")
    rollup_id = rollup_id or str(ULID())
    if rollup_id in members_wanted:
        raise AbstractError("a rollup cannot absorb itself", field="member_ids")
    owner = WorldObject.objects.filter(id=owner_id, type=ObjectType.ENTITY).first()
    if owner is None:
        raise NotFound(
            f"owner {owner_id!r} is not an entity of any loaded world", field="viewer_id"
        )
    with transaction.atomic():
        generation = _lock_generation(owner_id)
        if generation != expected_generation:
            raise AbstractConflict(
                f"owner {owner_id!r} is at generation {generation}, not {expected_generation}",
                field="expected_generation",
            )
        if LedgerEntry.objects.filter(id=rollup_id).exists():
            raise AbstractConflict(f"an entry with id {rollup_id!r} already exists", field="id")
        members = _resolve_members(owner_id, members_wanted)
        created_at = now_us()
        rollup = _write_rollup(owner, rollup_id, name, body, slug, importance, created_at)
        _mark_absorbed(members, rollup_id)
        _write_edges(members, owner_id, rollup_id, created_at)
        bump_generation(owner_id)
    return rollup
