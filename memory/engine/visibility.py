"""Who may see an attribute (seed 000 §2): the one rule world knowledge, the places a digest
names and the leak scanner all go through.

Pure, and kept out of `memory.engine.knowledge` (which loads the ORM) so the leak scanner,
which bench/ runs without Django, judges private values by the same function.
"""

from __future__ import annotations

from collections.abc import Container

PUBLIC = "PUBLIC"
PRIVATE = "PRIVATE"


def can_see(
    viewer_id: str, object_id: str, visibility: str, allowed_viewer_ids: Container[str]
) -> bool:
    """A PUBLIC attribute is everyone's; any other is seen by the object it describes and by
    the viewers its ACL names."""
    return visibility == PUBLIC or viewer_id == object_id or viewer_id in allowed_viewer_ids
