"""The buffer's text index (memory/migrations/0019): which of one viewer's rows may hold the
words a search asks for, read from the index instead of from every row; and the bulk doors'
way of filling it, one statement after their rows land instead of one trigger a row.

SQLite keeps an FTS5 table over the view `buffer_words` (triggers keep it row by row);
PostgreSQL a GIN index over `buffer_words(intent_json, outcome_json)`, kept by itself. What a
row must hold comes from memory.engine.buffer.words; a row whose stored text the index cannot
vouch for carries ANY_WORD and is read by every search.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.db import connection

from memory.active_save import among, scoped_cursor
from memory.engine.buffer.words import IndexTerm

ANY_WORD = "zzanyword"
# A prefix that begins the words of more rows than this (across the store) is cheaper to
# look for by reading the viewer's rows in order, where it turns up at once: the index would
# read every one of those rows' entries first (about half a microsecond each).
MAX_PREFIX_ROWS = 40_000

Key = tuple[str, int, str]  # (timestamp, created_at, id): the buffer's reading order


def owner_word(save_id: int, owner_id: str) -> str:
    """The word every row of one owner in one save carries in the SQLite index."""
    return f"zzowner{save_id}x{owner_id.encode().hex()}"


def candidates(
    save_id: int, owner_id: str, terms: Sequence[IndexTerm], cap: int
) -> list[tuple[int, Key]] | None:
    """(uid, key) of the owner's rows that hold every term (and those the index cannot vouch
    for), in reading order; None when the index cannot narrow them to `cap` rows or fewer."""
    rows = _rows_holding(
        save_id, terms, cap, "uid, timestamp, created_at, id, owner_id, game_save_id", owner_id
    )
    if rows is None:
        return None
    # A quarantined row (empty id) is never shown; the owner word is the owner's on SQLite,
    # unless a row's own text happens to hold it.
    found = [
        (uid, (timestamp, created_at, id_))
        for uid, timestamp, created_at, id_, owner, save in rows
        if owner == owner_id and save == save_id and id_ != ""
    ]
    found.sort(key=lambda row: row[1])
    return found


def save_candidates(save_id: int, terms: Sequence[IndexTerm], cap: int) -> list[str] | None:
    """The timestamps of the save's rows that hold every term (and those the index cannot
    vouch for), newest first; None when the index cannot narrow them to `cap` rows or fewer
    (a search across a save: every owner's rows at once)."""
    rows = _rows_holding(save_id, terms, cap, "timestamp", where="AND id <> ''")
    if rows is None:
        return None
    return sorted({timestamp for (timestamp,) in rows}, reverse=True)


def _rows_holding(
    save_id: int,
    terms: Sequence[IndexTerm],
    cap: int,
    columns: str,
    owner_id: str | None = None,
    where: str = "",
) -> list[tuple] | None:
    """`columns` of the save's rows (one owner's, given one) that may hold every term, read
    through the index; None past `cap` rows, or when no term is narrow enough to look up."""
    counts = _PrefixRows()
    terms = [t for t in terms if counts.of(t) <= MAX_PREFIX_ROWS]
    if not terms:
        return None
    rows: list[tuple] = []
    if connection.vendor == "sqlite":
        match = f"(({' AND '.join(f'({_fts5(t)})' for t in terms)}) OR {ANY_WORD})"
        if owner_id is not None:
            match = f'"{owner_word(save_id, owner_id)}" AND {match}'
        # Every save's rows share the index: the cap counts them all, the save (and the
        # owner) is told apart by the rows themselves.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid FROM buffer_fts WHERE buffer_fts MATCH %s LIMIT %s", [match, cap + 1]
            )
            uids = [uid for (uid,) in cursor.fetchall()]
        if len(uids) > cap:
            return None
        step = connection.features.max_query_params or 900
        for start in range(0, len(uids), step):
            chunk = uids[start : start + step]
            with scoped_cursor(save_id) as scoped:
                # The rows by their keys alone (`+` keeps the save's column off every index):
                # statistics that say a save holds few rows (a sampled ANALYZE of a big one
                # says 2,001) had SQLite read the whole save's index for a thousand keys
                # (40-110 ms of a search at 1M rows, against 2).
                keys, params = among("uid", chunk)
                scoped.execute(
                    f"SELECT {columns} FROM buffer_entries WHERE +game_save_id = %(save)s {where} "
                    f"AND {keys}",
                    params,
                )
                rows += scoped.fetchall()
    else:
        match = " & ".join(f"({_tsquery(t)})" for t in terms)
        owner = "AND owner_id = %s" if owner_id is not None else ""
        with scoped_cursor(save_id) as scoped:
            scoped.execute(
                f"SELECT {columns} FROM buffer_entries WHERE game_save_id = %(save)s {owner} "
                f"{where} AND buffer_words(intent_json, outcome_json) @@ %s::tsquery LIMIT %s",
                [*([owner_id] if owner_id is not None else []), f"({match}) | {ANY_WORD}", cap + 1],
            )
            rows = scoped.fetchall()
    return None if len(rows) > cap else rows


class _PrefixRows:
    """How many rows' entries a term's prefixes would have the index read (it reads every
    word that begins a prefix before it answers): SQLite counts them in its word list;
    PostgreSQL estimates them from the statistics ANALYZE keeps on the index (the share of
    rows holding each common word; a rare word is not among them, and reads few)."""

    def __init__(self) -> None:
        self.common: list[tuple[str, float]] | None = None

    def of(self, term: IndexTerm) -> float:
        if not term.prefixes:
            return 0
        if connection.vendor == "sqlite":
            total = 0
            with connection.cursor() as cursor:
                for prefix in term.prefixes:
                    cursor.execute(
                        "SELECT coalesce(sum(doc), 0) FROM buffer_fts_terms "
                        "WHERE term >= %s AND term < %s",
                        [prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)],
                    )
                    total += cursor.fetchone()[0]
            return total
        if self.common is None:
            self.common = _postgres_common_words()
        starts = tuple(term.prefixes)
        return sum(rows for word, rows in self.common if word.startswith(starts))


def _postgres_common_words() -> list[tuple[str, float]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
            "FROM pg_stats s JOIN pg_class c ON c.relname = 'buffer_entries' "
            "AND c.relnamespace = to_regnamespace(current_schema()) "
            "WHERE s.schemaname = current_schema() AND s.tablename = 'buffer_entries_words'"
        )
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return []
    words, shares, rows = row
    return [(word, share * max(rows, 0)) for word, share in zip(words, shares, strict=False)]


# Query words are ASCII letters and digits (memory.engine.buffer.words), so quoting them is
# all either query language needs.
def _fts5(term: IndexTerm) -> str:
    parts = [f'"{p}"*' for p in sorted(term.prefixes)]
    parts += [f'"{w}"' for w in sorted(term.words)]
    parts += ["(" + " AND ".join(f'"{w}"' for w in words) + ")" for words in sorted(term.ids)]
    return " OR ".join(parts)


def _tsquery(term: IndexTerm) -> str:
    parts = [f"'{p}':*" for p in sorted(term.prefixes)]
    parts += [f"'{w}'" for w in sorted(term.words)]
    parts += ["(" + " & ".join(f"'{w}'" for w in words) + ")" for words in sorted(term.ids)]
    return " | ".join(parts)


INSERT_TRIGGER = "buffer_words_insert"


@contextmanager
def filled_after() -> Iterator[None]:
    """Inside a bulk door's transaction: the buffer rows it inserts get their words in one
    statement once they are in, not one trigger a row (a fifth of a 200,000-row import's time
    against most of it). Only inserts: a row deleted inside would leave the index before it
    entered. On PostgreSQL the index keeps itself; an error rolls the rest back with the rows."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s", [INSERT_TRIGGER]
        )
        (trigger,) = cursor.fetchone()
        # Rowids only grow (AUTOINCREMENT): what lands from here on is past the largest now.
        cursor.execute("SELECT coalesce(max(uid), 0) FROM buffer_entries")
        (before,) = cursor.fetchone()
        cursor.execute(f"DROP TRIGGER {INSERT_TRIGGER}")
    yield
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO buffer_fts (rowid, words) SELECT uid, words FROM buffer_words "
            "WHERE uid > %s",
            [before],
        )
        cursor.execute(trigger)
