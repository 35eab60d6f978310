"""The app's tables, one module per concern; every model is importable from here.

- `saves`: Save, and `SaveScoped`, the column and managers every row of a save carries;
- `omnia`: omnia's own tables, mirrored column for column;
- `projections`: the fold's tables (generations, shards, problems, sessions, episodes);
- `longterm`: layers, subscriptions, rollup edges;
- `leaks`: stored findings and their acceptances;
- `access`: the alias edit history, the audit log, API tokens;
- `live`: the live follower's resume state.
"""

from __future__ import annotations

from memory.models.access import AliasChange, ApiToken, AuditLog
from memory.models.leaks import LeakAcceptance, LeakAllowRule, LeakFinding, LeakScan
from memory.models.live import LiveFollow, LiveRow
from memory.models.longterm import AbstractionEdge, Layer, LayerSubscription
from memory.models.omnia import (
    Attribute,
    AttributeAcl,
    BufferEntry,
    Entity,
    LedgerEntry,
    LedgerInvolvedEntity,
    ObjectType,
    Visibility,
    WorldObject,
)
from memory.models.projections import (
    ClockMark,
    Episode,
    MemorySession,
    OwnerState,
    ProjectionProblem,
    ProjectionShard,
    SessionSummary,
)
from memory.models.saves import Save, SaveScoped

__all__ = [
    "AbstractionEdge",
    "AliasChange",
    "ApiToken",
    "Attribute",
    "AttributeAcl",
    "AuditLog",
    "BufferEntry",
    "ClockMark",
    "Entity",
    "Episode",
    "Layer",
    "LayerSubscription",
    "LeakAcceptance",
    "LeakAllowRule",
    "LeakFinding",
    "LeakScan",
    "LedgerEntry",
    "LedgerInvolvedEntity",
    "LiveFollow",
    "LiveRow",
    "MemorySession",
    "ObjectType",
    "OwnerState",
    "ProjectionProblem",
    "ProjectionShard",
    "Save",
    "SaveScoped",
    "SessionSummary",
    "Visibility",
    "WorldObject",
]
