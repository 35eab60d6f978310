"""Half of a long read-and-compute job in a second process, streamed back as it is made.

A rebuild reads and folds every row and then builds every viewer's prompt; both are CPU in
Python over committed rows, one owner or one viewer at a time, and the machine has a second
core. `Beside(produce)` forks a helper that runs `produce()` on its own database connection
(the parent's stays untouched: the child never uses or closes it) and sends each item it
yields back through a pipe, so the parent can fold its own half meanwhile and write both.
What the helper reads is what is committed: a caller decides it may (`may_fan_out`), since
a helper cannot see rows of a transaction the caller has open around it.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from asgiref.local import Local
from django.conf import settings
from django.db import connection, connections

from memory.engine.lifetime import die_with_parent

_DONE = "done"
_ITEM = "item"
_FAILED = "failed"

# The parent's connection objects, kept referenced in a helper so nothing there ever frees
# them: freeing a PostgreSQL connection sends its server a Terminate on the parent's socket.
_INHERITED: list[object] = []


class HelperFailed(RuntimeError):
    """The helper process raised or died; the message carries its traceback or exit code."""


def processes() -> int:
    """How many processes a fanned-out job uses (OMNIA_REBUILD_PROCESSES): 1 or 2."""
    return 2 if settings.OMNIA_REBUILD_PROCESSES > 1 else 1


def may_fan_out() -> bool:
    """Whether a helper would see what this process sees: it reads only committed rows, so
    not inside a transaction the caller opened (a test's, a caller's atomic block), and only
    where fork exists."""
    return (
        processes() > 1
        and not connection.in_atomic_block
        and "fork" in multiprocessing.get_all_start_methods()
    )


def _fresh_connections() -> None:
    # A new per-process table of connections: the first query opens this process's own.
    _INHERITED.append(connections._connections)
    connections._connections = Local(connections.thread_critical)


def _run(produce: Callable[[], Iterable[Any]], pipe, parent_pid: int) -> None:
    try:
        die_with_parent(parent_pid)
        _fresh_connections()
        for item in produce():
            pipe.send((_ITEM, item))
        pipe.send((_DONE, None))
    except BaseException:
        pipe.send((_FAILED, traceback.format_exc()))
    finally:
        for conn in connections.all(initialized_only=True):
            conn.close()  # this process's own connections, never the inherited ones


class Beside:
    """A forked helper running `produce()`; iterate `ready()` while working, then `rest()`.

    Use as a context manager: leaving it early (the parent raised) ends the helper.
    """

    def __init__(self, produce: Callable[[], Iterable[Any]]) -> None:
        context = multiprocessing.get_context("fork")
        self._pipe, child_end = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_run, args=(produce, child_end, os.getpid()), daemon=True
        )
        self._process.start()
        child_end.close()
        self._done = False

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._pipe.close()

    def _receive(self) -> tuple[bool, Any]:
        try:
            kind, payload = self._pipe.recv()
        except EOFError:
            self._process.join()
            raise HelperFailed(
                f"the helper process ended without finishing (exit {self._process.exitcode})"
            ) from None
        if kind == _FAILED:
            raise HelperFailed(f"the helper process raised:\n{payload}")
        if kind == _DONE:
            self._done = True
            return False, None
        return True, payload

    def ready(self) -> Iterator[Any]:
        """The items the helper has sent so far, without waiting for more."""
        while not self._done and self._pipe.poll():
            has_item, item = self._receive()
            if has_item:
                yield item

    def rest(self) -> Iterator[Any]:
        """Every item still to come, waiting for each, until the helper is done."""
        while not self._done:
            has_item, item = self._receive()
            if has_item:
                yield item
