"""What an imported row must be, and the validator that checks an import's buffer rows batch
by batch, in a second process when the import is large.

The second process is spawned, not forked, and runs only `memory.engine.intents.first_invalid_row`
(pydantic, no Django): it imports nothing of the inspector's database layer.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from memory.engine.intents import first_invalid_row
from memory.engine.visibility import PRIVATE, PUBLIC
from memory.models import ObjectType
from memory.worlds.report import WorldImportError

logger = logging.getLogger(__name__)

OBJECT_TYPES = {t.value for t in ObjectType}
VISIBILITIES = {PUBLIC, PRIVATE}


class BatchValidator:
    """Validates an import's rows batch by batch, reporting the first invalid row in file
    order. For a large import it runs in a second process (pydantic holds the GIL): batch k
    is validated there while this process inserts it, and the transaction is not committed
    until every batch has come back clean. A small import validates inline."""

    MAX_PENDING = 4  # batches in flight: bounds memory, keeps the pipe full

    def __init__(self, source: str, table: str, parallel: bool) -> None:
        self.source, self.table = source, table
        self.pending: deque[tuple[list, Future]] = deque()
        self.pool: ProcessPoolExecutor | None = None
        self.broken = False
        if parallel and (os.cpu_count() or 1) > 1:
            # spawn, not fork: the child must not inherit this process's open database
            # connection; it imports only memory.engine.intents (pydantic, no Django).
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, rows: list[tuple[str, str, str | None]]) -> None:
        if self.pool is None or self.broken:
            self.finish()  # earlier batches first: file order
            self._check(rows, first_invalid_row(rows))
            return
        try:
            future = self.pool.submit(first_invalid_row, rows)
        except BrokenProcessPool:
            self.broken = True
            self.submit(rows)
            return
        self.pending.append((rows, future))
        while len(self.pending) > self.MAX_PENDING:
            self._settle_oldest()

    def before_error_at(self, rows_before: list[tuple[str, str, str | None]]) -> None:
        """Called before refusing a row for its structure: an invalid row earlier in the file
        is the one to report."""
        self.finish()
        self._check(rows_before, first_invalid_row(rows_before))

    def finish(self) -> None:
        while self.pending:
            self._settle_oldest()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _settle_oldest(self) -> None:
        rows, future = self.pending.popleft()
        try:
            found = future.result()
        except BrokenProcessPool:
            # The helper could not run (e.g. an unguarded __main__ that spawn re-imports):
            # validate here instead. Slower, never wrong.
            if not self.broken:
                logger.warning("import validator process failed; validating in-process")
            self.broken = True
            found = first_invalid_row(rows)
        self._check(rows, found)

    def _check(
        self, rows: list[tuple[str, str, str | None]], found: tuple[int, str] | None
    ) -> None:
        if found is not None:
            raise WorldImportError(self.source, self.table, f"id={rows[found[0]][0]}", found[1])
