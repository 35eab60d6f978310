"""Words about a session: the language seam and where its answers land (seed 003, rule 10).

The fold never writes prose. A session row is structure — a span, two counts, a last member,
a hash. Words come from a Summarizer (an LLM, a service; none by default) and are stored
beside the row keyed by (owner, session key, content hash), so a summary written for an older
state of the session is still found but reported stale once the session's hash moves on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory.active_save import among, scoped_rows
from memory.models import MemorySession, SessionSummary


class Summarizer(Protocol):
    source: str

    def summarize(self, session: MemorySession) -> str | None:
        """Words about this session, or None to leave it unsummarized."""
        ...


class NoSummarizer:
    """The default seam: the engine owns no language model, so there are no words."""

    source = "none"

    def summarize(self, session: MemorySession) -> str | None:
        return None


def store_summary(
    owner_id: str, session_key: str, content_hash: str, text: str, source: str
) -> SessionSummary:
    """Land words for one state of one session; writing the same state again replaces them."""
    summary, _created = SessionSummary.objects.update_or_create(
        owner_id=owner_id,
        session_key=session_key,
        content_hash=content_hash,
        defaults={"text": text, "source": source},
    )
    return summary


def summary_for(session: MemorySession) -> tuple[str | None, bool]:
    """(text, stale): the summary of this exact state, else the newest older one marked stale."""
    return summaries_for([session])[(session.owner_id, session.session_key)]


def summaries_for(
    sessions: Sequence[MemorySession],
) -> dict[tuple[str, str], tuple[str | None, bool]]:
    """summary_for of every session, keyed by (owner, session key), in one query: a page of
    twenty sessions is one read, not forty."""
    answers: dict[tuple[str, str], tuple[str | None, bool]] = {
        (s.owner_id, s.session_key): (None, False) for s in sessions
    }
    if not sessions:
        return answers
    current = {(s.owner_id, s.session_key): s.content_hash for s in sessions}
    # Raw: the ORM's statement took longer to build than to answer (every viewer page asks).
    owners, owner_params = among("owner_id", sorted({s.owner_id for s in sessions}))
    keys, key_params = among("session_key", sorted({s.session_key for s in sessions}))
    rows = scoped_rows(
        f"SELECT owner_id, session_key, content_hash, text FROM {SessionSummary._meta.db_table} "
        f"WHERE game_save_id = %(save)s AND {owners} AND {keys} ORDER BY created_at DESC, id DESC",
        [*owner_params, *key_params],
    )
    found: set[tuple[str, str]] = set()
    for row in rows:
        key = (row[0], row[1])
        if key not in current or key in found:
            continue
        if row[2] == current[key]:
            answers[key] = (row[3], False)
            found.add(key)
        elif answers[key] == (None, False):
            answers[key] = (row[3], True)  # the newest older one, unless this state has its own
    return answers


def summarize(
    session: MemorySession, summarizer: Summarizer | None = None
) -> SessionSummary | None:
    """Ask the seam for words about the session's current state and land them, if any."""
    seam = summarizer or NoSummarizer()
    text = seam.summarize(session)
    if text is None:
        return None
    return store_summary(
        session.owner_id, session.session_key, session.content_hash, text, seam.source
    )
