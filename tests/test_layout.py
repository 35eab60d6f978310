"""The layout's one rule that no import contract can hold: a module past 400 lines is split
(STYLE.md), unless README.md's Layout section names it with its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 400

pytestmark = pytest.mark.pure  # files only: the same on every backend


def _long_modules() -> dict[str, int]:
    found = {}
    for path in sorted((ROOT / "memory").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            found[path.relative_to(ROOT).as_posix()] = lines
    return found


def _named_in_readme() -> dict[str, str]:
    """Each exception README lists under "Files past 400 lines", with its reason."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("Files past 400 lines", 1)[1].split("\n## ", 1)[0]
    return {
        path: reason.strip()
        for path, reason in re.findall(r"^- `([^`]+)`: (.+?)(?=^- |\Z)", section, re.M | re.S)
    }


def test_no_module_past_400_lines_but_those_readme_names_with_a_reason() -> None:
    named = _named_in_readme()
    long = _long_modules()
    assert sorted(long) == sorted(named), (long, named)
    assert all(reason for reason in named.values())


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("## Layout", 1)[1].split("```", 2)[1]


def test_readme_layout_names_every_module() -> None:
    # One line per module (issue 26): a module added without its line in the Layout is a
    # module a reader of README cannot find. Packages' __init__ files re-export only, and the
    # commands are listed by name under "Commands"; migrations are Django's.
    block = _layout_block()
    missing = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "memory").rglob("*.py"))
        if "migrations" not in path.parts
        and path.name != "__init__.py"
        and not (path.parent.name == "commands" and not path.name.startswith("_"))
        and not re.search(rf"(?<![\w]){re.escape(path.name)}\b", block)
    ]
    assert missing == []
