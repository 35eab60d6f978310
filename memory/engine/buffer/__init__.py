"""Subjective buffer serialization: one stored memory row as one viewer reads it (seed 000 §2-§3).

`serializer` is the door (it tells the two eras apart); `entry`, `v1` (with JavaScript's clock
in `jsdate`), `v2` (with the English agreement of `grammar`, `tags`, `coordination`,
`first_person`) render them; `rendered` reads a stored row for one viewer.
"""

from __future__ import annotations

from memory.engine.buffer.entry import Entry, Undeliverable
from memory.engine.buffer.serializer import render_stored_entry, serialize_subjective_buffer_entry

__all__ = ["Entry", "Undeliverable", "render_stored_entry", "serialize_subjective_buffer_entry"]
