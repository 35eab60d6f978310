"""The read doors over the memory projections: sessions(), digest(), episodes().

Every answer reports its own bound (seed 003, rule 8): `rows_visited` is the number of rows
its queries returned — projection rows, the retracted members the live count read, the member
and place rows a digest names. The viewer's own identity lookup is not counted.

The digest hash (rule 9) saves the CALLER's tokens, never the engine's reads: a caller that
passes the hash it already holds is told `unchanged` and handed no lines, but the door still
read what it needed to compute that hash, and says so in rows_visited.

A store never written has zero sessions: that is an answer (an empty page), never an error.
An unknown viewer is NotFound, a bad limit or cursor InvalidInput naming the field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC
from typing import Any, NamedTuple

from memory.active_save import among, scoped_cursor, scoped_rows
from memory.engine.clock import parse_timestamp, short_date, time_key, time_of_day
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.knowledge import Viewer
from memory.engine.newest import chunks, first_rows_of_each
from memory.engine.projections.rows import FoldRow, owner_rows
from memory.engine.projections.sessions import fold_owner, session_key_of
from memory.engine.shards import shard_of
from memory.engine.visibility import PUBLIC, can_see
from memory.models import (
    Attribute,
    AttributeAcl,
    BufferEntry,
    Episode,
    MemorySession,
    ObjectType,
    WorldObject,
)

DIGEST_SESSIONS = 20
# Ids named in one IN list: SQLite's parameter limit, with room to spare.
_IDS_PER_QUERY = 500
PLACE_ATTRIBUTES = ("name", "description")


@dataclass(frozen=True)
class SessionItem:
    session_key: str
    kind: str  # "conversation" or "scene"
    first_at: str
    last_at: str
    memory_count: int  # historical: every member ever written, retracted or not
    dialogue_count: int
    last_member_id: str
    content_hash: str
    live_count: int  # members not retracted, counted at read time (not a fold term)


@dataclass(frozen=True)
class EpisodeItem:
    ordinal: int
    first_at: str
    last_at: str
    first_member_id: str
    last_member_id: str
    member_count: int
    is_open: bool


@dataclass(frozen=True)
class Page:
    items: list[Any]
    rows_visited: int
    next_cursor: str | None


@dataclass(frozen=True)
class Digest:
    lines: list[str]
    hash: str
    unchanged: bool
    rows_visited: int


def _check_viewer(viewer: str | Viewer) -> str:
    """The viewer's id, checked to be an entity unless it comes already read (a Viewer)."""
    if isinstance(viewer, Viewer):
        return viewer.id
    if not WorldObject.objects.filter(id=viewer, type=ObjectType.ENTITY).exists():
        raise NotFound(f"no entity with id {viewer!r}", field="viewer_id")
    return viewer


# --- sessions ----------------------------------------------------------------------------------


class _SessionRow(NamedTuple):
    session_key: str
    first_at: str
    last_at: str
    memory_count: int
    dialogue_count: int
    last_member_id: str
    content_hash: str
    last_key: str


# The two doors' pages in raw SQL: every viewer page reads both, and the ORM took longer to
# build them (0.6 and 0.4 ms on SQLite) than the database to answer.
_SESSIONS_SQL = (
    f"SELECT {', '.join(_SessionRow._fields)} FROM {MemorySession._meta.db_table} "
    "WHERE game_save_id = %(save)s AND owner_id = %s{before} "
    "ORDER BY last_key DESC, session_key DESC LIMIT %s"
)
_EPISODES_SQL = (
    f"SELECT {', '.join(f.name for f in fields(EpisodeItem))} FROM {Episode._meta.db_table} "
    "WHERE game_save_id = %(save)s AND owner_id = %s{before} ORDER BY ordinal DESC LIMIT %s"
)


def _session_rows(
    viewer_id: str, limit: int, before: str | None
) -> tuple[list[_SessionRow], str | None, int]:
    if limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    after, params = "", [viewer_id]
    if before:
        last_key, key = decode_cursor(
            before, (str, str), field="before", message=f"malformed cursor {before!r}"
        )
        after = " AND (last_key < %s OR (last_key = %s AND session_key < %s))"
        params += [last_key, last_key, key]
    # One row past the page tells us whether there is a next one; it was read, so it counts.
    # By time, not by text: last_key is last_at as a UTC key (stored beside it by the fold).
    sql = _SESSIONS_SQL.format(before=after)
    fetched = list(map(_SessionRow._make, scoped_rows(sql, [*params, limit + 1])))
    page = fetched[:limit]
    next_cursor = (
        encode_cursor([page[-1].last_key, page[-1].session_key]) if len(fetched) > limit else None
    )
    return page, next_cursor, len(fetched)


def _retracted_counts(viewer_id: str) -> tuple[dict[str, int], int]:
    """Retracted members per session key, up to the fold's watermark: one grouped COUNT.

    Live = historical − retracted. Counting only the retracted (rare) members keeps the read
    small; stopping at the watermark keeps it consistent with the historical count it is
    subtracted from. The watermark is read in the same statement (a shard without one stands
    at (0, ""), before every row): one round trip on every viewer page.
    """
    with scoped_cursor() as cursor:
        cursor.execute(
            "SELECT b.conversation_id, b.location_id, COUNT(*) FROM buffer_entries b "
            "LEFT JOIN memory_projection_shards w "
            "ON w.game_save_id = %(save)s AND w.shard = %s "
            "WHERE b.game_save_id = %(save)s AND b.owner_id = %s AND b.retracted_at IS NOT NULL "
            "AND (b.created_at < COALESCE(w.last_created_at, 0) "
            "OR (b.created_at = COALESCE(w.last_created_at, 0) AND b.id <= COALESCE(w.last_id, ''))) "
            "GROUP BY b.conversation_id, b.location_id",
            (shard_of(viewer_id), viewer_id),
        )
        groups = cursor.fetchall()
    counts: dict[str, int] = {}
    for conversation_id, location_id, n in groups:
        key = session_key_of(conversation_id, location_id)
        counts[key] = counts.get(key, 0) + int(n)
    return counts, sum(counts.values())


def _kind(session_key: str) -> str:
    return "scene" if session_key.startswith("scene:") else "conversation"


def sessions(viewer: str | Viewer, *, limit: int = 50, before: str | None = None) -> Page:
    """The viewer's sessions, newest last_at first (ties by key), with live counts."""
    viewer_id = _check_viewer(viewer)
    page, next_cursor, visited = _session_rows(viewer_id, limit, before)
    retracted: dict[str, int] = {}
    if page:
        retracted, counted = _retracted_counts(viewer_id)
        visited += counted
    items = [
        SessionItem(
            session_key=row.session_key,
            kind=_kind(row.session_key),
            first_at=row.first_at,
            last_at=row.last_at,
            memory_count=int(row.memory_count),
            dialogue_count=int(row.dialogue_count),
            last_member_id=row.last_member_id,
            content_hash=row.content_hash,
            live_count=int(row.memory_count) - retracted.get(row.session_key, 0),
        )
        for row in page
    ]
    return Page(items=items, rows_visited=visited, next_cursor=next_cursor)


# --- digest --------------------------------------------------------------------------------------


def _place_names_of_each(
    wanted: dict[str, set[str]],
) -> dict[str, tuple[dict[str, str], int]]:
    """What each viewer calls each of its places (its name, else its description, when the
    viewer may see it), and the rows that took: the places' attributes in one query, the ACL
    rows naming those viewers on the guarded ones in another, per chunk."""
    attrs_of: dict[str, list[tuple[str, str, str]]] = {}
    # Raw, as knowledge's reads: the ORM prepared each id of the lists in Python.
    names, name_params = among("name", PLACE_ATTRIBUTES)
    for chunk in chunks(sorted(set().union(*wanted.values())), _IDS_PER_QUERY):
        objects, params = among("object_id", chunk)
        for object_id, name, value, visibility in scoped_rows(
            f"SELECT object_id, name, value, visibility FROM {Attribute._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {objects} AND {names}",
            [*params, *name_params],
        ):
            attrs_of.setdefault(object_id, []).append((name, value, visibility))
    guarded = {o for o, attrs in attrs_of.items() if any(a[2] != PUBLIC for a in attrs)}
    # Only the viewers' own ACL rows are read: each names one viewer for one attribute.
    granted: dict[str, set[tuple[str, str]]] = {}
    asking = [v for v, places in wanted.items() if places & guarded]
    for viewers in chunks(asking, _IDS_PER_QUERY):
        for objects in chunks(sorted(guarded), _IDS_PER_QUERY):
            guarded_ids, guarded_params = among("object_id", objects)
            asking_ids, asking_params = among("entity_id", viewers)
            for entity_id, object_id, attribute in scoped_rows(
                "SELECT entity_id, object_id, attribute_name "
                f"FROM {AttributeAcl._meta.db_table} WHERE game_save_id = %(save)s "
                f"AND {guarded_ids} AND {asking_ids}",
                [*guarded_params, *asking_params],
            ):
                granted.setdefault(entity_id, set()).add((object_id, attribute))
    out: dict[str, tuple[dict[str, str], int]] = {}
    for viewer_id, places in wanted.items():
        attrs = [(o, *a) for o in places for a in attrs_of.get(o, ())]
        private = {o for o, _n, _v, vis in attrs if vis != PUBLIC}
        allowed = {key for key in granted.get(viewer_id, ()) if key[0] in private}
        visible: dict[str, dict[str, str]] = {}
        for object_id, name, value, visibility in attrs:
            if can_see(
                viewer_id,
                object_id,
                visibility,
                (viewer_id,) if (object_id, name) in allowed else (),
            ):
                visible.setdefault(object_id, {})[name] = value
        names = {}
        for object_id, found in visible.items():
            for attr in PLACE_ATTRIBUTES:
                if found.get(attr):
                    names[object_id] = found[attr]
                    break
        out[viewer_id] = (names, len(attrs) + len(allowed))
    return out


UNKNOWN_PLACE = "an unknown place"  # a session whose place was never written
UNFAMILIAR_PLACE = "an unfamiliar place"  # a place the viewer may not see the name of


def _session_places_of_each(
    wanted: dict[str, list[tuple[str, str]]],
) -> dict[str, tuple[dict[str, str], int]]:
    """Where each viewer's sessions ((session key, last member id) pairs) happened, as that
    viewer calls the place, and the rows read: a scene's place is in its key, a
    conversation's is where its last memory was written (one query per chunk of them)."""
    members = {
        v: {last for key, last in pairs if _kind(key) == "conversation"}
        for v, pairs in wanted.items()
    }
    member_places: dict[str, str | None] = {}
    for chunk in chunks(sorted(set().union(set(), *members.values())), _IDS_PER_QUERY):
        ids, params = among("id", chunk)
        member_places.update(
            scoped_rows(
                f"SELECT id, location_id FROM {BufferEntry._meta.db_table} "
                f"WHERE game_save_id = %(save)s AND {ids}",
                params,
            )
        )
    places = {
        v: {
            key: (key.removeprefix("scene:") or None)
            if _kind(key) == "scene"
            else member_places.get(last)
            for key, last in pairs
        }
        for v, pairs in wanted.items()
    }
    names = _place_names_of_each({v: {p for p in at.values() if p} for v, at in places.items()})
    out = {}
    for viewer_id, at in places.items():
        place_names, read = names[viewer_id]
        named = {
            key: UNKNOWN_PLACE if loc is None else place_names.get(loc, UNFAMILIAR_PLACE)
            for key, loc in at.items()
        }
        out[viewer_id] = (named, len(members[viewer_id] & member_places.keys()) + read)
    return out


def session_places(viewer_id: str, sessions: Sequence[SessionItem]) -> dict[str, str]:
    """Each of these sessions of one viewer by where it happened, as the viewer calls the
    place (its name, else its description): "the Drowned Lantern", never "loc-…"."""
    pairs = [(s.session_key, s.last_member_id) for s in sessions]
    return _session_places_of_each({viewer_id: pairs})[viewer_id][0]


def _clock(timestamp: str) -> tuple[str, str]:
    """("Jul 6", "12:38 PM") in UTC; an unparseable stamp is shown as written."""
    moment = parse_timestamp(timestamp)
    if moment is None:
        return "", timestamp
    moment = moment.astimezone(UTC)
    return short_date(moment), time_of_day(moment)


def _span(first_at: str, last_at: str) -> str:
    (first_day, first_time), (last_day, last_time) = _clock(first_at), _clock(last_at)
    if first_day != last_day:
        return f"from {first_day}, {first_time} to {last_day}, {last_time}"
    if first_time == last_time:
        return f"at {first_time}"
    return f"from {first_time} to {last_time}"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def digest_line(
    kind: str, place: str, first_at: str, last_at: str, memories: int, spoken: int
) -> str:
    opening = "A conversation" if kind == "conversation" else "A scene"
    return (
        f"{opening} at {place} {_span(first_at, last_at)}: "
        f"{_plural(memories, 'memory', 'memories')}, {spoken} spoken"
    )


def digest(
    viewer: str | Viewer, known_hash: str | None = None, *, limit: int = DIGEST_SESSIONS
) -> Digest:
    """Viewer-relative lines naming its latest sessions, oldest first, with no ids in them."""
    viewer_id = _check_viewer(viewer)
    answer = digests([viewer_id], limit=limit)[viewer_id]
    if known_hash is not None and known_hash == answer.hash:
        return Digest(lines=[], hash=answer.hash, unchanged=True, rows_visited=answer.rows_visited)
    return answer


_DIGEST_COLUMNS = (
    "session_key",
    "first_at",
    "last_at",
    "memory_count",
    "dialogue_count",
    "last_member_id",
    "last_key",
)
# The sessions door's order (its index): newest last moment first, ties by key.
_DIGEST_ORDER = (("last_key", True), ("session_key", True))


def digests(viewers: Sequence[str | Viewer], *, limit: int = DIGEST_SESSIONS) -> dict[str, Digest]:
    """digest() of each of these viewers (ids the caller has already read: not checked),
    every read made for all of them at once: their newest sessions in one statement, the
    places of those sessions in two more, per chunk of viewers (the leak rescan's prompts)."""
    if limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    ids = [v.id if isinstance(v, Viewer) else v for v in viewers]
    # One row past the page, as the sessions door reads it: it was read, so it counts.
    newest = first_rows_of_each(
        "memory_sessions", "owner_id", ids, _DIGEST_COLUMNS, _DIGEST_ORDER, limit + 1
    )
    pages = {v: list(reversed(rows[:limit])) for v, rows in newest.items()}
    return _digests_of(pages, {v: len(rows) for v, rows in newest.items()})


# A viewer's rows as digest_at folds them (owner_rows): read once by a caller asking the
# digest at several moments (the first moments of a prompt's findings), handed back each time.
OwnerRows = Sequence[FoldRow]


def rows_for_digests(viewer_id: str) -> OwnerRows:
    return owner_rows(viewer_id)


def digest_at(
    viewer_id: str,
    at_key: str,
    *,
    limit: int = DIGEST_SESSIONS,
    rows: OwnerRows | None = None,
) -> Digest:
    """The digest as it stood at a moment (`at_key`, a clock.time_key): the viewer's sessions
    folded again from its rows of that moment or before (the stored sessions hold only their
    latest terms), the newest `limit` of them, read as digest() reads the stored ones. `rows`:
    the viewer's rows (rows_for_digests) when the caller read them for several moments."""
    every = owner_rows(viewer_id, until=at_key) if rows is None else rows
    rows = [r for r in every if (r.key or time_key(r.timestamp)) <= at_key]
    states = sorted(
        fold_owner(rows).values(), key=lambda s: (s.last_key, s.session_key), reverse=True
    )
    page = [
        (
            s.session_key,
            s.first_at,
            s.last_at,
            s.memory_count,
            s.dialogue_count,
            s.last_member_id,
            s.last_key,
        )
        for s in reversed(states[:limit])
    ]
    return _digests_of({viewer_id: page}, {viewer_id: len(rows)})[viewer_id]


def _digests_of(pages: dict[str, list[tuple]], read_rows: dict[str, int]) -> dict[str, Digest]:
    """Each viewer's digest lines from its page of sessions (oldest first, as _DIGEST_COLUMNS),
    the places named as the viewer knows them; `read_rows`: rows each viewer's page took."""
    places = _session_places_of_each(
        {v: [(row[0], row[5]) for row in page] for v, page in pages.items()}
    )
    out = {}
    for viewer_id, page in pages.items():
        place_of, read = places[viewer_id]
        out[viewer_id] = _digest(page, place_of, read_rows[viewer_id] + read)
    return out


def _digest(page: Sequence[tuple], place_of: dict[str, str], visited: int) -> Digest:
    """The digest of a page of sessions (oldest first, as _DIGEST_COLUMNS begin), each
    session's place as the viewer calls it (`place_of`, by session key)."""
    lines = [
        digest_line(_kind(key), place_of[key], first_at, last_at, int(count), int(spoken))
        for key, first_at, last_at, count, spoken, *_rest in page
    ]
    digest_hash = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return Digest(lines=lines, hash=digest_hash, unchanged=False, rows_visited=visited)


def digest_of_sessions(page: Page, places: dict[str, str]) -> Digest | None:
    """digest() from a page of the sessions door (newest first) and session_places of it,
    when the page holds the digest's sessions (at least DIGEST_SESSIONS of them, or every
    one): the page that shows both reads them once. None when it does not."""
    items = page.items
    if len(items) < DIGEST_SESSIONS and page.next_cursor is not None:
        return None
    shown = list(reversed(items[:DIGEST_SESSIONS]))
    rows = [(s.session_key, s.first_at, s.last_at, s.memory_count, s.dialogue_count) for s in shown]
    return _digest(rows, places, page.rows_visited)


# --- episodes ------------------------------------------------------------------------------------


def episodes(viewer: str | Viewer, *, limit: int = 50, before: str | None = None) -> Page:
    """The viewer's episodes, newest first; the open one (if any) leads."""
    viewer_id = _check_viewer(viewer)
    if limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    after, params = "", [viewer_id]
    if before:
        (ordinal,) = decode_cursor(
            before, (int,), field="before", message=f"malformed cursor {before!r}"
        )
        after, params = " AND ordinal < %s", [viewer_id, ordinal]
    sql = _EPISODES_SQL.format(before=after)
    fetched = scoped_rows(sql, [*params, limit + 1])
    # The columns are EpisodeItem's, in its order (SQLite answers is_open as 0 or 1).
    items = [
        EpisodeItem(ordinal, first, last, first_id, last_id, int(count), bool(is_open))
        for ordinal, first, last, first_id, last_id, count, is_open in fetched[:limit]
    ]
    next_cursor = encode_cursor([items[-1].ordinal]) if len(fetched) > limit else None
    return Page(items=items, rows_visited=len(fetched), next_cursor=next_cursor)
