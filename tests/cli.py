"""Running manage.py as a person does: a child process with its own environment and database,
so what the terminal shows (exit status, stderr, a closed pipe, a progress bar) is tested."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Settings the child must not inherit from the test run, so each test says what it sets.
_OMNIA_SETTINGS = ("OMNIA_DEBUG", "OMNIA_SECRET_KEY", "OMNIA_TESTING", "DATABASE_URL")


def isolated_env(database: Path | None = None, **extra: str) -> dict[str, str]:
    """A child's environment with none of the test run's settings (not its test database):
    with `database`, a SQLite file of its own; `extra` says anything else it sets."""
    env = {k: v for k, v in os.environ.items() if k not in _OMNIA_SETTINGS}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    if database is not None:
        env.update(OMNIA_DEBUG="1", DATABASE_URL=f"sqlite:///{database}")
    env.update(extra)
    return env


def manage(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)} exit {done.returncode}: {done.stderr}")
    return done


def manage_on_a_terminal(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal (as a person's shell has it); stdout stays a pipe.
    Returns the exit status and everything written to the terminal."""
    primary, secondary = pty.openpty()
    # A new pseudo-terminal is 0 columns wide; a bar needs a width, as a real terminal has.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
    ) as child:
        os.close(secondary)
        seen = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        status = child.wait(timeout=120)
    os.close(primary)
    return status, seen.decode(errors="replace")


def long_scenario(path: Path, memories: int) -> str:
    """A scenario with one NPC who remembers `memories` monologues; returns the NPC's id."""
    npc = "npc-long"
    doc = {
        "id": "long-world",
        "name": "Long",
        "startTime": "2026-07-09T08:00:00.000Z",
        "world": {"attributes": []},
        "locations": [{"id": "loc-hall", "parentId": None, "attributes": [], "connections": []}],
        "entities": [
            {
                "id": npc,
                "locationId": "loc-hall",
                "attributes": [{"name": "name", "value": "Lang", "visibility": "PUBLIC"}],
                "aliases": {},
                "initialMemories": [
                    {
                        "id": f"m-{i:05d}",
                        "timestamp": f"2026-07-09T{8 + i // 3600:02d}:{i // 60 % 60:02d}:"
                        f"{i % 60:02d}.000Z",
                        "locationId": "loc-hall",
                        "intent": {
                            "type": "monologue",
                            "content": f"Thought number {i} about the long hall.",
                            "actorId": npc,
                            "targetIds": [],
                        },
                    }
                    for i in range(memories)
                ],
            }
        ],
    }
    path.write_text(json.dumps(doc))
    return npc
