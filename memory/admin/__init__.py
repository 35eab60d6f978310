"""The admin door, one module per concern: `entities` (entities with their aliases as an
editable table), `records` (buffer rows, alias history, audit log, accepted leaks: read-only),
`tokens` (API tokens); `base` holds what they are made of. Importing them registers them.
"""

from __future__ import annotations

from memory.admin.entities import EntityAdmin
from memory.admin.records import (
    AliasChangeAdmin,
    AuditLogAdmin,
    BufferEntryAdmin,
    LeakAcceptanceAdmin,
)
from memory.admin.tokens import ApiTokenAdmin

__all__ = [
    "AliasChangeAdmin",
    "ApiTokenAdmin",
    "AuditLogAdmin",
    "BufferEntryAdmin",
    "EntityAdmin",
    "LeakAcceptanceAdmin",
]
