"""A helper process that dies with the process that started it.

Helpers (the import's validator, a rebuild's second process) would otherwise outlive a
`kill -9` of their parent: nothing closes the pipe they wait on. Linux's parent-death signal
ends them the moment the parent goes, however it goes; elsewhere the helper at least exits
if the parent is already gone when it starts. Runs in the child, so it imports nothing of
Django.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
