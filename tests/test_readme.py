"""README cannot drift from the code: every command it shows is run here, in README's order,
on a database of its own, the way a newcomer would type them after a fresh clone."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from django.core.management import get_commands

from tests.cli import ROOT, isolated_env

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.readme

README = (ROOT / "README.md").read_text()

# Long-running: started, probed (the banner, /healthz, the banner's login), then stopped.
SERVED = {"make run", "PORT=8001 make run"}
# Targets that would replace this checkout's virtualenv or lock file, or run this very suite
# (`make test` is the gate that runs this file): `make -n` proves the target is there and
# what it would run; CI runs them for real.
DRY = {"make test", "make lock", "make clean"}


def fenced_commands(text: str) -> list[str]:
    """Every command line of every ```sh block, comments dropped, in order, once each."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command and command not in found:
                found.append(command)
    return found


def inline_manage_commands(text: str) -> list[str]:
    """`.venv/bin/python manage.py …` written out in the prose (not a placeholder)."""
    return [c for c in re.findall(r"`(\.venv/bin/python manage\.py [^`]+)`", text) if "…" not in c]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(opener, url: str, data: dict | None = None) -> tuple[int, str, str]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    with opener.open(url, data=body, timeout=10) as response:
        return response.status, response.geturl(), response.read().decode()


def serve_and_probe(command: str, env: dict[str, str]) -> None:
    """Run `make run` (on a free port: 8000 or 8001 may be taken on a shared machine), wait for
    its banner and for the site to answer, sign in with the login the banner names, stop it."""
    port = _free_port()
    command = re.sub(r"\bPORT=\d+", f"PORT={port}", command)
    if "PORT=" not in command:
        command = f"PORT={port} {command}"
    # The suite runs inside the installed virtualenv: never reinstall into it from here.
    command = command.replace("make run", "make -o .venv/.installed-runtime run")
    server = subprocess.Popen(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: runserver's reloader child goes too
    )
    seen: list[str] = []
    try:
        for line in server.stdout:
            seen.append(line)
            if "Log in as" in line:  # the banner's last word before the server starts
                break
        banner = "".join(seen)
        assert f"Omnia Memory Inspector: http://127.0.0.1:{port}/" in banner, banner
        assert "Traceback" not in banner, banner
        base = f"http://127.0.0.1:{port}"
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _url, _body = _get(opener, f"{base}/healthz")
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.3)
        assert status == 200
        login = re.search(r"Log in as (\S+) / (\S+) ", seen[-1])
        _status, _url, page = _get(opener, f"{base}/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        status, url, page = _get(
            opener,
            f"{base}/accounts/login/?next=/",
            {"csrfmiddlewaretoken": token, "username": login[1], "password": login[2]},
        )
        assert (status, urllib.parse.urlsplit(url).path) == (200, "/"), page[:500]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def run_in_shell(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (command, done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, (command, done.stderr)
    assert done.stdout.strip(), (command, "printed nothing")
    return done


def test_every_readme_command_runs_in_order(tmp_path: Path) -> None:
    commands = fenced_commands(README)
    makes = [c for c in commands if re.search(r"(^|\s)make\b", c)]
    # A make target new to README must be sorted into SERVED or DRY here, or it fails.
    assert set(makes) == SERVED | DRY, set(makes) ^ (SERVED | DRY)
    # As a newcomer's shell has it: no OMNIA_* set; README's own `export` lines set them.
    env = isolated_env(DATABASE_URL=f"sqlite:///{tmp_path / 'readme.sqlite3'}")
    for command in [*commands, *inline_manage_commands(README)]:
        if command in SERVED:
            serve_and_probe(command, env)
        elif command in DRY:
            target = command.split("make", 1)[1].strip()
            done = subprocess.run(
                ["make", "-n", target], cwd=ROOT, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0 and done.stdout, (command, done.stderr)
        elif match := re.fullmatch(r"export (\w+)=(\S+)", command):
            env[match[1]] = match[2]
        else:
            run_in_shell(command, env)


def test_readme_commands_are_what_the_test_above_runs() -> None:
    """The list the newcomer test walks, spelled out: a change to README shows up here."""
    assert fenced_commands(README) == [
        "make run",
        "make test",
        "PORT=8001 make run",
        "make lock",
        "export OMNIA_DEBUG=1",
        ".venv/bin/python manage.py ensure_login --username qa --password omnia-qa --role reader",
        ".venv/bin/python manage.py ensure_login --username writer --password omnia-writer "
        "--role editor",
        ".venv/bin/python manage.py ensure_login --username lead --password omnia-lead --role admin",
        ".venv/bin/python manage.py ensure_login --username root --password omnia-root --superuser",
        ".venv/bin/python manage.py migrate",
        ".venv/bin/python manage.py import_omnia tests/fixtures/omnia/omnia-head-tavern.sqlite "
        "--fold",
        ".venv/bin/python manage.py render_buffer alice | head -3",
        "make clean",
        ".venv/bin/python manage.py omnia_standin var/readme-live.sqlite --rows 30 --rate 0 "
        "--plant-leak",
        ".venv/bin/python manage.py follow_omnia var/readme-live.sqlite --once",
    ]
    assert inline_manage_commands(README) == [".venv/bin/python manage.py check"]


def test_every_make_target_named_in_readme_exists() -> None:
    targets = set(re.findall(r"`(?:[A-Z_]+=\S+ )*make ([a-z-]+)", README)) | {
        c.split("make ", 1)[1] for c in fenced_commands(README) if "make " in c
    }
    assert {"run", "test", "lock", "clean", "bench", "bench-smoke", "serve-prod"} <= targets
    for target in sorted(targets):
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, (target, done.stderr)


def test_every_command_in_readmes_table_exists() -> None:
    named = re.findall(r"^\| `([a-z_]+)[ `]", README, flags=re.M)
    assert len(named) == 16
    assert set(named) - set(get_commands()) == set()
    ours = {name for name, app in get_commands().items() if app == "memory"}
    assert ours - set(named) == set()  # and every command of ours is in the table


def test_the_readme_screenshot_is_there_and_small() -> None:
    assert "![" in README and "(docs/viewer.png)" in README
    shot = ROOT / "docs" / "viewer.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size < 150_000
    width = int.from_bytes(shot.read_bytes()[16:20], "big")
    assert width == 1440
