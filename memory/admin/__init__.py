"""The admin door, one module per concern: `entities` (entities with their aliases as an
editable table), `records` (buffer rows, alias history, audit log, accepted leaks: read-only),
`tokens` (API tokens); `base` holds what they are made of. Importing them registers them.
"""

from __future__ import annotations

from django.contrib import admin

from memory.admin.entities import EntityAdmin
from memory.admin.records import (
    AliasChangeAdmin,
    AuditLogAdmin,
    BufferEntryAdmin,
    LeakAcceptanceAdmin,
)
from memory.admin.tokens import ApiTokenAdmin

# The site is named for this product, not "Django administration".
admin.site.site_header = "Omnia Memory Inspector — admin"
admin.site.site_title = "Omnia Memory Inspector admin"
admin.site.index_title = "People, memories and records"

__all__ = [
    "AliasChangeAdmin",
    "ApiTokenAdmin",
    "AuditLogAdmin",
    "BufferEntryAdmin",
    "EntityAdmin",
    "LeakAcceptanceAdmin",
]
