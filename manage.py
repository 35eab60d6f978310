#!/usr/bin/env python
"""Django's command line, plus two things every command shares: a missing or bad setting is
one line naming the variable and the fix (exit 2), and a reader that closes the pipe early
(`| head`) ends the command quietly."""

from __future__ import annotations

import os
import select
import sys


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(argv)
    except ImproperlyConfigured as exc:
        # omnia_site/settings.py words each of these as one line naming the variable and the
        # fix; Django would print a traceback around it.
        sys.stderr.write(f"{exc}\n")
        return 2
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # The reader has all it wanted. Point stdout at /dev/null so the interpreter's final
        # flush does not complain, and exit as a tool killed by SIGPIPE would (128 + 13).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


def _stdout_closed() -> bool:
    """True when the broken pipe is stdout's (not, say, a socket's inside a command): the
    write end of a pipe whose reader has gone polls as an error."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), select.POLLOUT)
    return any(event & select.POLLERR for _fd, event in poller.poll(0))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
