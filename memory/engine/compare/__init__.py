"""Compare: two viewers in one save, or one viewer in two saves (issue 16 item 4).

Two questions QA asks after a replay:
- *What does A know that B doesn't?* Two viewers of one save (`viewers`).
- *What changed between two playthroughs?* One viewer in two saves (`saves`).

Both are made of the same `parts` and the buffer `merge`, and answer with the dataclasses of
`results`. No HTTP here: the command, the page and the API all read those (`as_dict()`).
"""

from __future__ import annotations

from memory.engine.compare.budget import Budget
from memory.engine.compare.results import (
    AliasDiff,
    BufferDiff,
    Matching,
    Mode,
    Named,
    ProjectionDiff,
    SavesComparison,
    SessionRef,
    ViewersComparison,
)
from memory.engine.compare.saves import compare_saves
from memory.engine.compare.viewers import compare_viewers

__all__ = [
    "Budget",
    "AliasDiff",
    "BufferDiff",
    "Matching",
    "Mode",
    "Named",
    "ProjectionDiff",
    "SavesComparison",
    "SessionRef",
    "ViewersComparison",
    "compare_saves",
    "compare_viewers",
]
