"""The leak scanner's naive baseline: one compiled regex per pattern, run over the text.

Kept apart from `memory.engine.leaks.scanner` for the tests (the automaton must find exactly
what this finds) and for bench/bench_leaks.py (how much faster the automaton is). Nothing in
the inspector scans with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from memory.engine.leaks.scanner import (
    Finding,
    LeakIndex,
    LeakWorld,
    build_leak_index,
    fold,
    judge_hits,
)


def _token_regex(key: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(key) + r"(?!\w)")


@dataclass(frozen=True)
class NaiveLeakIndex:
    """One compiled regex per pattern (and per viewer label): the bench's baseline."""

    index: LeakIndex
    regexes: tuple[re.Pattern[str], ...]
    label_regexes: Mapping[str, tuple[re.Pattern[str], ...]]


def build_naive_index(world: LeakWorld) -> NaiveLeakIndex:
    index = build_leak_index(world)
    return NaiveLeakIndex(
        index=index,
        regexes=tuple(_token_regex(p.key) for p in index.patterns),
        label_regexes={
            viewer: tuple(_token_regex(label) for label in labels)
            for viewer, labels in index.labels.items()
        },
    )


def _all_matches(regex: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    # Search again from one past each match start: a pattern may overlap itself ("ha ha").
    match = regex.search(text)
    while match is not None:
        yield match
        match = regex.search(text, match.start() + 1)


def scan_text_naive(world: LeakWorld | NaiveLeakIndex, viewer_id: str, text: str) -> list[Finding]:
    """Same findings as `scan_text`, found by running every pattern's regex over the text.
    Given a bare world it compiles the regexes first (slow; build_naive_index once instead)."""
    naive = world if isinstance(world, NaiveLeakIndex) else build_naive_index(world)
    folded = fold(text)
    hits = [
        (match.start(), match.end(), number)
        for number, regex in enumerate(naive.regexes)
        for match in _all_matches(regex, folded)
    ]
    if not hits:
        return []
    shields = [
        match.span()
        for regex in naive.label_regexes.get(viewer_id, ())
        for match in _all_matches(regex, folded)
    ]

    def shielded(start: int, end: int) -> bool:
        return any(s < end and start < e and e - s >= end - start for s, e in shields)

    return judge_hits(naive.index, viewer_id, text, hits, shielded)
