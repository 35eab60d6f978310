"""Where a long-term entry lives (`ledger_entries.scope_id`, seed 004): an entity's own write
home, `home:<entity id>`, or a shared read-only layer, `layer:<layer id>`. Every writer and
reader spells a scope through here.
"""

from __future__ import annotations


def home_scope(entity_id: str) -> str:
    return f"home:{entity_id}"


def layer_scope(layer_id: str) -> str:
    return f"layer:{layer_id}"
