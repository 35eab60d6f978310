"""Words about a session: the language seam and where its answers land (seed 003, rule 10).

The fold never writes prose. A session row is structure — a span, two counts, a last member,
a hash. Words come from a Summarizer (an LLM, a service; none by default) and are stored
beside the row keyed by (owner, session key, content hash), so a summary written for an older
state of the session is still found but reported stale once the session's hash moves on.
"""

from __future__ import annotations

from typing import Protocol

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
    summaries = SessionSummary.objects.filter(
        owner_id=session.owner_id, session_key=session.session_key
    )
    current = summaries.filter(content_hash=session.content_hash).first()
    if current is not None:
        return current.text, False
    older = summaries.order_by("-created_at", "-id").first()
    if older is not None:
        return older.text, True
    return None, False


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
