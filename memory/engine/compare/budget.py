"""How much one comparison may cost: a page or an API call asks for a bounded answer (issue
29 item 4: a 1M-row save once gave a 110 MB page after 69 s); the command asks for all of it.

The merge counts every difference it meets but keeps only one page of them (`skip`, then
`lines`), stops reading at the deadline, and says how far it got; a saves comparison of
every viewer compares one page of viewers (`viewer_skip`, then `viewers`)."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    seconds: float | None = None  # wall time for the whole comparison
    lines: int | None = None  # differences kept per buffer (a page)
    skip: int = 0  # differences passed over before the first kept
    line_chars: int | None = None  # a longer line is cut, saying how much was left out
    viewers: int | None = None  # viewers compared per page (saves mode, every viewer)
    viewer_skip: int = 0
    started: float = 0.0

    @classmethod
    def unbounded(cls) -> Budget:
        return cls()

    def start(self) -> Budget:
        return Budget(**{**self.__dict__, "started": time.monotonic()})

    @property
    def bounded(self) -> bool:
        return self.seconds is not None or self.lines is not None

    def spent(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.started > self.seconds

    def keeps(self, index: int) -> bool:
        """Whether the index-th difference (from 0) is on the page."""
        return index >= self.skip and (self.lines is None or index < self.skip + self.lines)

    def cut(self, text: str | None) -> str | None:
        if text is None or self.line_chars is None or len(text) <= self.line_chars:
            return text
        left = len(text) - self.line_chars
        return f"{text[: self.line_chars]}… ({left:,} more characters: see the entry page)"
