"""One follower a save: a second `follow_omnia` feeding the same save is refused in one line
while the first runs (issue 29, finding 9: two followers both applied the same rows' changes,
each believing its marks). The lock is the database's or the store file's own, so it goes
with the process: a follower killed with -9 leaves nothing to clean up, and the next one starts
at once.

- PostgreSQL: a session advisory lock on a connection of its own, so nothing Django does with
  its connection (closing it, a failed transaction) can let it go early; any machine sharing
  the store sees it.
- SQLite: an flock on a file beside the store (the store is a local file: so are its
  followers).
"""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

_NAMESPACE = 0x0F011  # pg_try_advisory_lock(namespace, save): "omnia follow"


class AlreadyFollowed(Exception):
    """Another follower feeds this save now."""


def _refusal(name: str, where: str) -> AlreadyFollowed:
    return AlreadyFollowed(
        f"save {name!r} is already followed by another follow_omnia ({where}); stop that one "
        "first, or follow into another save with --as NAME"
    )


@contextmanager
def sole_follower(name: str) -> Iterator[None]:
    """Hold the follow lock of save `name` while the block runs, or raise AlreadyFollowed.
    Save names are one save whatever their case ("Demo" is "demo"): so is the lock."""
    if connection.vendor == "postgresql":
        with _advisory_lock(name):
            yield
        return
    store = str(connection.settings_dict["NAME"])
    if store == ":memory:" or store.startswith("file:"):
        yield  # no file to lock beside, and no other process can reach the store
        return
    lock_path = Path(f"{store}.follow-{name.casefold()}.lock")
    with open(lock_path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise _refusal(name, f"process {lock.read().strip() or '?'}") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield  # the lock goes with the file's closing (or the process)


@contextmanager
def _advisory_lock(name: str) -> Iterator[None]:
    key = zlib.crc32(name.casefold().encode()) - 2**31  # an int4, as the two-key form takes
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = True
        with raw.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", (_NAMESPACE, key))
            if not cursor.fetchone()[0]:
                cursor.execute(
                    "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' "
                    "AND l.classid = %s AND l.objid = %s::oid AND l.granted",
                    (_NAMESPACE, key & 0xFFFFFFFF),
                )
                holder = cursor.fetchone()
                raise _refusal(name, f"database session {holder[0] if holder else '?'}")
        yield
    finally:
        raw.close()  # ends the session: the lock with it
