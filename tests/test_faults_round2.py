"""Faults, second round (issue 29): one big field crashes nothing, an export destroys
nothing, every refusal is one line with exit 2, and JSON is read strictly at every door.

Whatever might kill the process (the leak scanner's C automaton) runs in a child process, so
a SIGSEGV fails the test instead of taking pytest down with it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.faults

MB = 1_000_000


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- the scanner is safe on any input -----------------------------------------------------------

SCAN_BIG = """
from memory.engine.leaks.scanner import LeakWorld, PrivateValue, build_leak_index, scan_text

size = {size}
secret = "Secret " + "x" * size
world = LeakWorld(
    object_ids=frozenset({{"w", "ann", "bo"}}),
    true_names={{"ann": "Ann", "bo": "Bo " + "y" * size}},
    aliases={{"ann": {{}}, "bo": {{}}}},
    private_values=(PrivateValue("w", "description", secret),),
)
index = build_leak_index(world)
text = "Ann says: " + secret + ". " + "z" * size + " Bo " + "y" * size
found = scan_text(index, "ann", text)
print(sorted((f.kind, f.start, f.end - f.start) for f in found))
del index
print("done")
"""


@pytest.mark.pure
@pytest.mark.parametrize("size", [MB, 10 * MB], ids=["1MB", "10MB"])
def test_scanner_big_patterns_and_text_do_not_crash(size: int) -> None:
    # A pattern of a million characters made pyahocorasick free its trie one C frame per
    # character: SIGSEGV (exit -11) when the index was dropped.
    done = run_python(SCAN_BIG.format(size=size))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[-1] == "done"
    start = len("Ann says: ")
    unknown = len("Ann says: ") + 7 + size + 2 + size + 1
    assert lines[0] == str(
        [("private_attribute", start, 7 + size), ("unknown_name", unknown, 3 + size)]
    )


@pytest.mark.pure
def test_scanner_long_keys_find_what_the_automaton_finds(monkeypatch) -> None:
    from memory.engine.leaks import scanner
    from memory.engine.leaks.naive import scan_text_naive

    world = scanner.LeakWorld(
        object_ids=frozenset({"w", "ann", "bob"}),
        true_names={"ann": "Ann", "bob": "Bob Stone"},
        aliases={"ann": {}, "bob": {}},
        private_values=(scanner.PrivateValue("w", "code", "red red"),),
    )
    text = "Bob Stone said red red red to bob; Ann heard Bob."
    monkeypatch.setattr(scanner, "MAX_AUTOMATON_KEY", 4)  # every key but "\x01w\x01" is long
    index = scanner.build_leak_index(world)
    assert len(index.long_keys) == 4
    assert scanner.scan_text(index, "ann", text) == scan_text_naive(world, "ann", text)
