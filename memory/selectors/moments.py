"""The prompt at a moment: the first moment at which each leak finding of a prompt appears.

A finding is one leak (section, kind, text, entity) of one prompt. It first appears at some
moment of play: when the row whose line carries it came in, or, for what is not read off a
row (the world's section, a label), at the viewer's first moment. The moments worth asking
are the viewer's rows whose stored text holds the finding's words, oldest first: each is
asked by building the prompt as it stood then and scanning it (the prompt can drop a line
again, and aliases change, so only a scan says): the finding's own section of it, which is
all that decides. A page builds at most FIRST_PROBES of them; a finding not found within
them says so rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Q

from memory.active_save import current_id
from memory.engine.alias_history import world_changes
from memory.engine.buffer.words import IndexTerm, words_of
from memory.engine.clock import is_untimed, time_key, world_time_at
from memory.engine.errors import InvalidInput
from memory.engine.knowledge import Viewer, WorldKnowledge, world_knowledge
from memory.engine.leaks.scanner import LeakIndex
from memory.engine.leaks.world_scan import ScanFinding, scan_viewer_at
from memory.engine.projections.doors import OwnerRows, rows_for_digests
from memory.engine.prompt import SESSIONS
from memory.engine.text_index import candidates
from memory.models import BufferEntry, LedgerEntry

FIRST_PROBES = 12  # prompts one page may build to find where its findings first appear

Key = tuple[str, str, str, str | None]


def finding_key(section: str, kind: str, text: str, entity_id: str | None) -> Key:
    return (section, kind, text, entity_id)


def _key_of(f: ScanFinding) -> Key:
    return finding_key(f.section, f.finding.kind, f.finding.text, f.finding.entity_id)


@dataclass(frozen=True)
class FirstSeen:
    """The first moment a finding is in the prompt, and the line it is read from there."""

    at: str  # the world time of that moment
    line: str  # the line of that prompt the finding is in


def _timed(stamps: Sequence[str], at: str | None) -> list[str]:
    """Distinct world times naming an instant, at or before `at`, oldest first, in the form
    a prompt at a moment takes (clock.world_time_at)."""
    bound = time_key(at) if at is not None else None
    keep = set()
    for stamp in stamps:
        if is_untimed(stamp) or (bound is not None and time_key(stamp) > bound):
            continue
        try:
            keep.add(world_time_at(stamp))
        except InvalidInput:
            continue  # an instant, but not in a form omnia writes: no moment to ask
    return sorted(keep, key=time_key)


# The rows the text index may name for a finding's words before it is read in order instead.
INDEXED_ROWS = 2_000


def _moments_holding(viewer_id: str, text: str, at: str | None) -> list[str]:
    """The moments of the viewer's rows whose stored text holds `text` (any case), oldest
    first: the rows holding every word of it, by the text index (memory.engine.text_index),
    then the text compared on those alone; past INDEXED_ROWS of them, on the owner's rows in
    order. (A scan finds a leak as whole words, so a row holding the text only inside longer
    words, which the index does not name, never holds the finding: the answer is the same.)
    Compared on all of a busy viewer's rows, each finding's search was 100,000 rows read."""
    buffer = (
        BufferEntry.objects.filter(owner_id=viewer_id)
        .exclude(id="")
        .filter(Q(intent_json__icontains=text) | Q(outcome_json__icontains=text))
    )
    terms = [IndexTerm(words=frozenset([word])) for word in dict.fromkeys(words_of(text))]
    found = candidates(current_id(), viewer_id, terms, INDEXED_ROWS) if terms else None
    if found is not None:
        buffer = buffer.filter(uid__in=[uid for uid, _key in found])
    ledger = LedgerEntry.objects.filter(owner_id=viewer_id, content__icontains=text)
    if at is not None:
        buffer, ledger = buffer.filter(timestamp__lte=at), ledger.filter(timestamp__lte=at)
    stamps = [
        *buffer.order_by("timestamp").values_list("timestamp", flat=True)[: FIRST_PROBES * 4],
        *ledger.order_by("timestamp").values_list("timestamp", flat=True)[: FIRST_PROBES * 4],
    ]
    return _timed(stamps, at)


def _first_moment(viewer_id: str, at: str | None) -> list[str]:
    rows = BufferEntry.objects.filter(owner_id=viewer_id).exclude(id="")
    if at is not None:
        rows = rows.filter(timestamp__lte=at)
    return _timed(rows.order_by("timestamp").values_list("timestamp", flat=True)[:1], at)


def _line_at(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : len(text) if end < 0 else end]


def first_moments(
    viewer: Viewer,
    found: Sequence[ScanFinding],
    at: str | None = None,
    knowledge: WorldKnowledge | None = None,
) -> dict[Key, FirstSeen | None]:
    """finding key -> where it first appears in the viewer's prompt (at or before `at`; None:
    not within FIRST_PROBES prompts). `knowledge`: the viewer's world, when the caller read it."""
    if not found:
        return {}
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    changes = world_changes(viewer.id)
    # Read once for every probe, when one is made: the viewer's rows (each probe's digest
    # folds them up to its moment: 11 reads of 100,000 rows were 6 s of one page) and the
    # leak index of each set of aliases it held.
    rows: dict[str, OwnerRows] = {}
    indexes: dict[tuple, LeakIndex] = {}
    # A probe builds and scans the finding's own section only: whether a leak is in a
    # section never depends on the others, and only the Sessions section needs the rows
    # (a busy viewer's prompt at eleven moments was 1.1-1.4 s, most of it folding sessions
    # no finding was in).
    scans: dict[tuple[str, str], tuple[str, dict[Key, ScanFinding]]] = {}
    answers: dict[Key, FirstSeen | None] = {}
    for f in found:
        key = _key_of(f)
        if key in answers:
            continue
        answers[key] = None
        moments = _moments_holding(viewer.id, f.finding.text, at) or _first_moment(viewer.id, at)
        for moment in moments:
            probe = (moment, f.section)
            if probe not in scans:
                if len(scans) >= FIRST_PROBES:
                    break
                if f.section == SESSIONS and not rows:
                    rows[viewer.id] = rows_for_digests(viewer.id)
                scan = scan_viewer_at(
                    viewer, moment, knowledge, changes, rows=rows, indexes=indexes, only=[f.section]
                )
                scans[probe] = (scan.prompt.text, {_key_of(s): s for s in scan.findings})
            text, there = scans[probe][0], scans[probe][1].get(key)
            if there is not None:
                answers[key] = FirstSeen(moment, _line_at(text, there.finding.start))
                break
    return answers
