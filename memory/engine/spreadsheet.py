"""CSV for spreadsheets: a cell a spreadsheet would run as a formula is written as text.

Leak findings quote LLM-written text, which an attacker can steer: a cell starting with
`=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with `'` (OWASP's advice), in the
page export and the CLI alike.
"""

from __future__ import annotations

from collections.abc import Iterable

FORMULA_LEADERS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(FORMULA_LEADERS):
        return "'" + value
    return value


def safe_row(values: Iterable[object]) -> list[object]:
    return [safe_cell(v) for v in values]
