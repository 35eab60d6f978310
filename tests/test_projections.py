"""The session projection: the fold, the cycle, rebuild, verify and the commands (seed 003)."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine.abstract import AbstractConflict, abstract
from memory.engine.projections import (
    MEMORY_PROJECTION_NAMES,
    MEMORY_PROJECTIONS,
    Projection,
    episodes,
    rebuild,
    registry,
    run_cycle,
    verify,
)
from memory.engine.projections.rows import FOLD_COLUMNS, FoldRow, _fold_row
from memory.engine.projections.sessions import (
    LOOKUP_CHUNK,
    SessionState,
    fold_owner,
    fold_session,
    load_sessions,
    session_hash,
    session_key_of,
)
from memory.engine.shards import generation_of
from memory.engine.write_door import retract
from memory.models import (
    AbstractionEdge,
    BufferEntry,
    Episode,
    LedgerEntry,
    MemorySession,
    OwnerState,
    ProjectionShard,
)
from tests.helpers import at, count_rows, episode_rows, session_rows, write

BASE = "2026-07-06T12:00:00.000Z"


def row(
    id_: str,
    minute: int,
    *,
    kind: str = "action",
    conversation: str | None = None,
    location: str | None = "hall",
    created_at: int = 0,
    timestamp: str | None = None,
) -> FoldRow:
    intent = json.dumps({"type": kind, "description": "x", "actorId": "alice", "targetIds": []})
    return FoldRow(
        id_, "alice", timestamp or at(minute), location, conversation, intent, created_at, 0
    )


# --- the fold itself ----------------------------------------------------------------------------


def test_fold_session_exact_terms_under_ordered_fold():
    state = None
    for r in [
        row("a", 10, kind="dialogue", created_at=1),
        row("b", 5, created_at=2),  # earlier in world time, later in write order
        row("c", 30, kind="dialogue", created_at=3),
        row("d", 20, created_at=4),
    ]:
        state = fold_session(state, r)
    assert (
        state.owner_id,
        state.session_key,
        state.first_at,
        state.last_at,
        state.memory_count,
        state.dialogue_count,
        state.last_member_id,
    ) == ("alice", "scene:hall", at(5), at(30), 4, 2, "d")


def test_fold_session_orders_mixed_timestamp_forms_chronologically():
    state = fold_session(None, row("a", 0, timestamp="2026-07-06T12:00:00Z"))
    state = fold_session(state, row("b", 0, timestamp="2026-07-06T12:00:00.500Z"))
    state = fold_session(state, row("c", 0, timestamp="2026-07-06T13:00:00+02:00"))  # 11:00 UTC
    state = fold_session(state, row("d", 0, timestamp="not a time"))  # a member, not a bound
    assert (state.first_at, state.last_at, state.memory_count) == (
        "2026-07-06T13:00:00+02:00",
        "2026-07-06T12:00:00.500Z",
        4,
    )


def test_fold_session_undeliverable_intent_counts_as_memory_not_dialogue():
    broken = FoldRow("a", "alice", at(0), None, None, '{"type": "dialogue"', 1, 0)
    escaped = FoldRow("b", "alice", at(1), None, None, '{"type": "\\u0064ialogue"}', 2, 0)
    state = fold_session(fold_session(None, broken), escaped)
    assert (state.session_key, state.memory_count, state.dialogue_count) == ("scene:", 2, 1)


def test_session_key_is_conversation_else_scene():
    assert session_key_of("conv-1", "hall") == "conv-1"
    assert session_key_of(None, "hall") == "scene:hall"
    assert session_key_of(None, None) == "scene:"
    assert session_key_of("", "hall") == "scene:hall"


def test_session_hash_is_sha256_of_canonical_encoding():
    state = fold_session(None, row("a", 0, kind="dialogue", conversation="c1"))
    expected = hashlib.sha256(
        json.dumps(["alice", "c1", at(0), at(0), 1, 1, "a"], separators=(",", ":")).encode()
    ).hexdigest()
    assert session_hash(state) == expected


def test_registry_is_closed_and_names_session_with_fold_and_door():
    from memory.engine.projections import doors

    assert frozenset({"session"}) == MEMORY_PROJECTION_NAMES
    assert MEMORY_PROJECTIONS["session"].fold is fold_session
    assert MEMORY_PROJECTIONS["session"].door is doors.sessions


def test_registry_refuses_a_projection_without_fold_or_door():
    with pytest.raises(TypeError, match="without a door"):
        Projection(name="topic", fold=fold_session, door=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="without a fold"):
        Projection(name="topic", fold=None, door=print)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="registered twice"):
        registry._registry(MEMORY_PROJECTIONS["session"], MEMORY_PROJECTIONS["session"])


def test_session_state_carries_no_author_and_no_stability():
    fields = set(SessionState._fields) | {f.name for f in MemorySession._meta.fields}
    assert not {"author", "author_id", "actor_id", "stability"} & fields


# --- the incremental cycle ------------------------------------------------------------------------


def test_run_cycle_folds_new_rows_into_sessions(cast):
    a1 = write("alice", 0, conversation="c1")
    a2 = write("alice", 5, kind="action", conversation="c1")
    a3 = write("alice", 7, location="cellar")
    b1 = write("bob", 3, conversation="c1")
    result = run_cycle()
    assert (result.rows_folded, result.sessions_written, result.episodes_written) == (4, 3, 2)
    rows = {(r[0], r[1]): r[2:7] for r in session_rows()}
    assert rows == {
        ("alice", "c1"): (at(0), at(5), 2, 1, a2),
        ("alice", "scene:cellar"): (at(7), at(7), 1, 1, a3),
        ("bob", "c1"): (at(3), at(3), 1, 1, b1),
    }
    assert a1 in BufferEntry.objects.values_list("id", flat=True)


def test_run_cycle_second_pass_reads_nothing(cast):
    write("alice", 0)
    run_cycle()
    again = run_cycle()
    assert (
        again.rows_visited,
        again.rows_folded,
        again.sessions_written,
        again.episodes_written,
    ) == (0, 0, 0, 0)


def test_run_cycle_is_forward_only_over_the_watermark(cast):
    write("alice", 0, conversation="c1")
    run_cycle()
    last = write("alice", 9, conversation="c1")
    result = run_cycle()
    assert (result.rows_folded, result.session_rows_read, result.sessions_written) == (1, 1, 1)
    assert session_rows()[0][2:7] == (at(0), at(9), 2, 2, last)
    shard = ProjectionShard.objects.get(shard=BufferEntry.objects.get(id=last).shard)
    assert (shard.last_created_at, shard.last_id) == (
        BufferEntry.objects.get(id=last).created_at,
        last,
    )


def test_run_cycle_stamps_nothing_on_canonical_rows(cast):
    write("alice", 0, conversation="c1")
    write("bob", 1)
    before = list(BufferEntry.objects.order_by("id").values())
    run_cycle()
    assert list(BufferEntry.objects.order_by("id").values()) == before


def test_run_cycle_small_batches_fold_the_same_as_one(cast):
    for minute in range(7):
        write("alice", minute, conversation="c1" if minute % 2 else None)
    result = run_cycle(batch_size=2)
    assert result.rows_folded == 7
    incremental = session_rows()
    rebuild()
    assert session_rows() == incremental


def test_run_cycle_rows_visited_is_the_rows_its_queries_returned(cast, monkeypatch):
    write("alice", 0, conversation="c1")
    write("bob", 0)
    run_cycle()
    for minute in (1, 2, 3):
        write("alice", minute, conversation="c1")
    write("alice", 4, conversation="c2")
    write("charlie", 5)
    with count_rows(monkeypatch) as counter:
        result = run_cycle()
    assert result.rows_visited == counter.total(
        "buffer_entries", "memory_sessions", "memory_episodes"
    )
    # 5 rows written; 1 stored session touched (alice/c1); 1 stored episode (alice's).
    assert (
        result.rows_visited,
        result.rows_folded,
        result.session_rows_read,
        result.episode_rows_read,
    ) == (7, 5, 1, 1)


def test_run_cycle_finds_projection_rows_by_key_never_by_scan(cast):
    write("alice", 0, conversation="c1")
    run_cycle()
    write("alice", 1, conversation="c1")
    with CaptureQueriesContext(connection) as queries:
        run_cycle()
    reads = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("SELECT")]
    session_reads = [
        sql for sql in reads if '"memory_sessions"' in sql or "memory_sessions " in sql
    ]
    assert session_reads and all("session_key" in sql.split("WHERE", 1)[1] for sql in session_reads)
    buffer_reads = [sql for sql in reads if "FROM buffer_entries" in sql]
    assert buffer_reads and all("(created_at, id) >" in sql for sql in buffer_reads)


def test_retracted_rows_still_count(cast):
    first = write("alice", 0, conversation="c1")
    write("alice", 1, conversation="c1")
    retract(first)
    run_cycle()
    assert session_rows()[0][4:6] == (2, 2)
    assert BufferEntry.objects.get(id=first).retracted_at is not None


def test_rebuild_equals_incremental_on_fields_and_hash(cast):
    write("alice", 0, conversation="c1")
    write("alice", 45, kind="action")
    run_cycle()
    first = write("bob", 2, conversation="c1")
    write("bob", 1, conversation="c1")
    retract(first)
    run_cycle()
    incremental, incremental_episodes = session_rows(), episode_rows()
    result = rebuild()
    assert (result.rows_folded, result.sessions, result.episodes) == (4, 3, 3)
    assert session_rows() == incremental
    assert episode_rows() == incremental_episodes


def test_rebuild_writes_by_recency_not_owner_by_owner(cast):
    # Each owner's latest session and episode (what the next cycle updates) go in last, so
    # they share the table's last pages: the stored order is (last_at, owner), not the owner's.
    # (A cycle does the same within each shard's flush.)
    write("alice", 0, conversation="c1")
    write("bob", 1, conversation="c2")
    write("alice", 2, conversation="c3")
    write("alice", 90, conversation="c3")  # a gap: alice's second episode
    write("bob", 3, conversation="c2")
    expected_sessions = [("alice", "c1"), ("bob", "c2"), ("alice", "c3")]
    expected_episodes = [("alice", 1), ("bob", 1), ("alice", 2)]  # ends at minutes 2, 3, 90

    def stored() -> tuple[list, list]:
        return (
            list(MemorySession.objects.order_by("pk").values_list("owner_id", "session_key")),
            list(Episode.objects.order_by("pk").values_list("owner_id", "ordinal")),
        )

    rebuild()
    assert stored() == (expected_sessions, expected_episodes)


def stored_session(owner_id: str, session_key: str, **more: Any) -> MemorySession:
    """A session row written around the fold (drift, as verify and rebuild meet it)."""
    return MemorySession.objects.create(
        owner_id=owner_id,
        session_key=session_key,
        first_at=BASE,
        last_at=BASE,
        memory_count=1,
        dialogue_count=0,
        last_member_id="x",
        content_hash="h",
        **more,
    )


def _pks() -> tuple[dict, dict]:
    return (
        dict(MemorySession.objects.values_list("pk", "session_key")),
        dict(Episode.objects.values_list("pk", "ordinal")),
    )


def test_a_rebuild_of_a_right_store_rewrites_nothing(cast):
    # Every row is folded afresh and compared; rows that are already what the fold gives stay
    # (the same primary keys), so a rebuild of a healthy store costs its read, not its write.
    write("alice", 0, conversation="c1")
    write("alice", 90, conversation="c1")  # a second episode
    write("bob", 1)
    run_cycle()
    before, sessions, episodes_before = _pks(), session_rows(), episode_rows()
    result = rebuild()
    assert (result.sessions, result.episodes, result.rows_written) == (2, 3, 0)
    assert (_pks(), session_rows(), episode_rows()) == (before, sessions, episodes_before)


def test_a_rebuild_mends_what_drifted_and_only_that(cast):
    write("alice", 0, conversation="c1")
    write("alice", 1, conversation="c2")
    write("bob", 0)
    write("bob", 90)
    write("bob", 200)  # bob: three episodes
    write("charlie", 0)
    run_cycle()
    right_sessions, right_episodes = session_rows(), episode_rows()
    bob_first = Episode.objects.get(owner_id="bob", ordinal=1).pk
    charlie_session = MemorySession.objects.get(owner_id="charlie").pk
    # Drift of every kind: a field, an episode in the middle, rows missing, an owner with
    # stored rows and no canonical row left.
    MemorySession.objects.filter(owner_id="alice", session_key="c1").update(memory_count=7)
    Episode.objects.filter(owner_id="bob", ordinal=2).update(member_count=9)
    Episode.objects.filter(owner_id="charlie").delete()
    stored_session("ghost", "c9", last_key="k")
    Episode.objects.create(
        owner_id="ghost",
        ordinal=1,
        first_at=BASE,
        last_at=BASE,
        first_member_id="x",
        last_member_id="x",
        member_count=1,
    )
    result = rebuild()
    # alice's two sessions, bob's episodes 2 and 3, charlie's episode; ghost's rows deleted.
    assert result.rows_written == 2 + 2 + 1
    assert (session_rows(), episode_rows()) == (right_sessions, right_episodes)
    assert Episode.objects.get(owner_id="bob", ordinal=1).pk == bob_first
    assert MemorySession.objects.get(owner_id="charlie").pk == charlie_session
    assert not verify().drifted


def test_rebuild_resets_watermarks_so_the_next_cycle_reads_nothing(cast):
    write("alice", 0)
    write("bob", 0)
    rebuild()
    assert run_cycle().rows_visited == 0


def test_rebuild_of_virgin_store_writes_nothing(save):
    assert (rebuild().rows_folded, MemorySession.objects.count()) == (0, 0)
    assert verify().as_dict() == {
        "sessions": 0,
        "identical": 0,
        "drift": [],
        "episodes": {"episodes": 0, "identical": 0, "drift": []},
        "shards": {"configured": 4, "stored": 4, "stranded_rows": 0},
        "problems": {"rows": 0, "recorded": 0, "drift": []},
    }


def test_verify_reports_drift_field_by_field(cast):
    write("alice", 0, conversation="c1")
    write("bob", 0)
    run_cycle()
    assert verify().as_dict() == {
        "sessions": 2,
        "identical": 2,
        "drift": [],
        "episodes": {"episodes": 2, "identical": 2, "drift": []},
        "shards": {"configured": 4, "stored": 4, "stranded_rows": 0},
        "problems": {"rows": 0, "recorded": 0, "drift": []},
    }
    MemorySession.objects.filter(owner_id="alice").update(memory_count=7)
    stored_hash = MemorySession.objects.get(owner_id="alice").content_hash
    result = verify()
    assert (result.sessions, result.identical) == (2, 1)
    assert result.drift == [
        {
            "owner_id": "alice",
            "session_key": "c1",
            "field": "memory_count",
            "stored": 7,
            "rebuilt": 1,
        },
    ]
    MemorySession.objects.filter(owner_id="alice").update(memory_count=1, content_hash="x")
    assert verify().drift == [
        {
            "owner_id": "alice",
            "session_key": "c1",
            "field": "content_hash",
            "stored": "x",
            "rebuilt": stored_hash,
        },
    ]


def test_verify_treats_unfolded_rows_as_lag_not_drift(cast):
    write("alice", 0)
    run_cycle()
    write("alice", 1)
    write("charlie", 1)
    assert verify().as_dict() == {
        "sessions": 1,
        "identical": 1,
        "drift": [],
        "episodes": {"episodes": 1, "identical": 1, "drift": []},
        "shards": {"configured": 4, "stored": 4, "stranded_rows": 0},
        "problems": {"rows": 0, "recorded": 0, "drift": []},
    }


def test_verify_reports_extra_and_missing_sessions(cast):
    write("alice", 0)
    run_cycle()
    stored_session("bob", "ghost")
    MemorySession.objects.filter(owner_id="alice").delete()
    drift = verify().drift
    assert [(d["owner_id"], d["session_key"], d["field"]) for d in drift] == [
        ("alice", "scene:tavern-main", "missing"),
        ("bob", "ghost", "extra"),
    ]


# --- commands -------------------------------------------------------------------------------------


def test_run_projections_command_prints_one_cycle_as_json(cast):
    write("alice", 0, conversation="c1")
    write("alice", 1, conversation="c1")
    out = io.StringIO()
    call_command("run_projections", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "rows_visited": 2,
        "rows_folded": 2,
        "sessions_written": 1,
    }


def test_rebuild_projections_command_verifies_and_exits_1_on_drift(cast):
    write("alice", 0)
    out = io.StringIO()
    call_command("rebuild_projections", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "sessions": 1,
        "rows_folded": 1,
        "episodes": 1,
        "rows_written": 2,
        "leak_viewers_scanned": 3,
        "problems": 0,
        "rows_moved": 0,
    }
    out = io.StringIO()
    call_command("rebuild_projections", "--verify", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "sessions": 1,
        "identical": 1,
        "drift": [],
        "episodes": {"episodes": 1, "identical": 1, "drift": []},
        "shards": {"configured": 4, "stored": 4, "stranded_rows": 0},
        "problems": {"rows": 0, "recorded": 0, "drift": []},
        "leak_findings": {"viewers": 3, "identical": 3, "behind": 0, "drift": []},
    }
    MemorySession.objects.update(dialogue_count=0)
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("rebuild_projections", "--verify", "--json", stdout=out)
    assert exit_info.value.code == 1
    assert json.loads(out.getvalue())["drift"] == [
        {
            "owner_id": "alice",
            "session_key": "scene:tavern-main",
            "field": "dialogue_count",
            "stored": 0,
            "rebuilt": 1,
        }
    ]


# --- the law: rebuild = incremental ---------------------------------------------------------------

OWNERS = ("alice", "bob", "charlie")

op = st.one_of(
    st.tuples(
        st.just("remember"),
        st.sampled_from(OWNERS),
        st.integers(0, 240),
        st.sampled_from([None, "c1", "c2"]),
        st.sampled_from([None, "tavern-main", "cellar"]),
        st.sampled_from(["dialogue", "action"]),
    ),
    st.tuples(st.just("retract"), st.integers(0, 50)),
    st.tuples(st.just("abstract"), st.sampled_from(OWNERS), st.integers(1, 3)),
    st.tuples(st.just("cycle"), st.integers(1, 4)),
)


def _reset_store() -> None:
    for model in (
        AbstractionEdge,
        LedgerEntry,
        BufferEntry,
        MemorySession,
        Episode,
        OwnerState,
        ProjectionShard,
    ):
        model.objects.all().delete()


def _apply(ops: list[tuple[Any, ...]]) -> None:
    written: list[str] = []
    for item in ops:
        if item[0] == "remember":
            _, owner, minute, conversation, location, kind = item
            written.append(
                write(owner, minute, conversation=conversation, location=location, kind=kind)
            )
        elif item[0] == "retract" and written:
            retract(written[item[1] % len(written)])
        elif item[0] == "abstract":
            _, owner, size = item
            free = list(
                BufferEntry.objects.filter(owner_id=owner, abstracted_into__isnull=True)
                .order_by("created_at")
                .values_list("id", flat=True)[:size]
            )
            if free:
                abstract(
                    owner,
                    free,
                    name=f"rollup {len(written)}",
                    body="b",
                    expected_generation=generation_of(owner),
                )
        elif item[0] == "cycle":
            run_cycle(batch_size=item[1])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(op, max_size=30))
def test_rebuild_equals_incremental_for_any_interleaving(cast, ops):
    _reset_store()
    _apply(ops)
    run_cycle()  # the public door alone: the cycle applies the clock rule itself
    incremental, incremental_episodes = session_rows(), episode_rows()
    verified = verify()
    assert (verified.drift, verified.episode_drift) == ([], [])
    rebuild()
    assert session_rows() == incremental
    assert episode_rows() == incremental_episodes
    # Historical counts: every row ever written is counted, retracted or not.
    assert sum(r[4] for r in incremental) == BufferEntry.objects.count()


def test_abstract_does_not_move_the_fold(cast):
    ids = [write("alice", m, conversation="c1") for m in range(3)]
    run_cycle()
    before = session_rows()
    abstract(
        "alice",
        ids[:2],
        name="the greeting",
        body="they met",
        expected_generation=generation_of("alice"),
    )
    assert run_cycle().rows_folded == 0
    assert session_rows() == before
    with pytest.raises(AbstractConflict):
        abstract(
            "alice", ids[:1], name="again", body="b", expected_generation=generation_of("alice")
        )


# --- summaries: words beside the row, never from the fold -----------------------------------------


def test_summary_is_keyed_by_hash_and_goes_stale_when_the_session_moves(cast):
    from memory.engine.projections.summaries import (
        NoSummarizer,
        store_summary,
        summarize,
        summary_for,
    )

    write("alice", 0, conversation="c1")
    run_cycle()
    session = MemorySession.objects.get(owner_id="alice")
    assert summarize(session, NoSummarizer()) is None
    assert summary_for(session) == (None, False)
    store_summary("alice", "c1", session.content_hash, "They said hello.", "test-seam")
    assert summary_for(session) == ("They said hello.", False)
    write("alice", 1, conversation="c1")
    run_cycle()
    session.refresh_from_db()
    assert summary_for(session) == ("They said hello.", True)

    class Echo:
        source = "echo"

        def summarize(self, s: MemorySession) -> str | None:
            return f"{s.memory_count} memories"

    landed = summarize(session, Echo())
    assert (landed.text, landed.source, landed.content_hash) == (
        "2 memories",
        "echo",
        session.content_hash,
    )
    assert summary_for(session) == ("2 memories", False)


def test_summaries_for_a_page_of_sessions_is_one_query(cast, django_assert_num_queries):
    from memory.engine.projections.summaries import store_summary, summaries_for

    write("alice", 0, conversation="c1")
    write("alice", 1, conversation="c2")
    write("alice", 2, conversation="c3")
    write("bob", 3, conversation="c1")
    run_cycle()
    by_key = {(s.owner_id, s.session_key): s for s in MemorySession.objects.all()}
    c1, c2, c3 = (by_key[("alice", k)] for k in ("c1", "c2", "c3"))
    store_summary("alice", "c1", "an-older-state", "old words", "t")
    store_summary("alice", "c1", c1.content_hash, "current words", "t")
    store_summary("alice", "c2", "older-1", "first", "t")
    store_summary("alice", "c2", "older-2", "second", "t")
    store_summary("bob", "c1", "bobs-old", "not alice's", "t")
    with django_assert_num_queries(1):
        answers = summaries_for([c1, c2, c3, by_key[("bob", "c1")]])
    assert answers == {
        ("alice", "c1"): ("current words", False),
        ("alice", "c2"): ("second", True),  # the newest older one, stale
        ("alice", "c3"): (None, False),
        ("bob", "c1"): ("not alice's", True),
    }
    with django_assert_num_queries(0):
        assert summaries_for([]) == {}


def test_cycle_read_is_an_index_range_seek_not_a_shard_scan(db):
    if connection.vendor != "sqlite":
        pytest.skip("the plan text checked here is SQLite's")
    sql = (
        f"EXPLAIN QUERY PLAN SELECT {FOLD_COLUMNS} FROM buffer_entries "
        "WHERE game_save_id = %s AND shard = %s AND (created_at, id) > (%s, %s) "
        "ORDER BY game_save_id, shard, created_at, id LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (1, 0, 1, "x", 10))
        plan = " ".join(str(r[-1]) for r in cursor.fetchall())
    assert "idx_buffer_shard_fold (game_save_id=? AND shard=? AND (created_at,id)>(?,?))" in plan


def test_stored_sessions_are_found_by_one_index_seek_per_pair_not_a_walk_of_the_save(cast):
    """The cycle's lookup of the sessions its rows touch must not grow with the store. With
    the save's id outside an OR of a full chunk of (owner, key) pairs, SQLite chose to walk
    every session of the save for each chunk (the first cycle after a 1M-row import walked up
    to 36,594 sessions per chunk). The plan of the very statement load_sessions runs."""
    if connection.vendor != "sqlite":
        pytest.skip(
            "the walk is SQLite's planner's choice and the plan text checked is SQLite's; on "
            "PostgreSQL load_sessions runs in every cycle test here and in test_projections_pg"
        )
    write("alice", 0, conversation="c1")
    write("bob", 1)
    run_cycle()
    stored = sorted(MemorySession.objects.values_list("owner_id", "session_key"))
    assert len(stored) == 2
    absent = [(f"npc-{n}", f"scene:room-{n}") for n in range(LOOKUP_CHUNK - len(stored))]
    with CaptureQueriesContext(connection) as queries:
        found = load_sessions([*stored, *absent])
    assert sorted(found) == stored
    (query,) = queries.captured_queries  # one chunk: the statement as run, values inlined
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + query["sql"])
        plan = [str(row[-1]) for row in cursor.fetchall()]
    reads = [line for line in plan if " USING " in line or line.startswith("SCAN s")]
    assert reads, plan
    assert all(
        line.startswith("SEARCH ")
        and line.endswith("(game_save_id=? AND owner_id=? AND session_key=?)")
        for line in reads
    ), plan


# --- a backlog: the first cycle after a large import ----------------------------------------------


def test_run_cycle_over_a_backlog_writes_each_touched_session_once(cast):
    owners = ("alice", "bob", "charlie")
    for i in range(60):
        # minutes 0..59 with a 45-minute jump at i == 30: two episodes per owner
        write(owners[i % 3], i + (45 if i >= 30 else 0), conversation=f"c{i % 2}")
    result = run_cycle(batch_size=5)  # twelve chunks, one flush
    assert (result.rows_folded, result.sessions_written, result.episodes_written) == (60, 6, 6)
    # each pair and owner loaded once, though twelve chunks touched them
    assert (result.session_rows_read, result.episode_rows_read) == (0, 0)
    assert result.rows_visited == 60
    incremental = (session_rows(), episode_rows())
    rebuild()
    assert (session_rows(), episode_rows()) == incremental


def test_run_cycle_flush_limits_bound_each_transaction_and_fold_the_same(cast, settings):
    settings.OMNIA_PROJECTION_SHARDS = 1  # every row in shard 0: the flushes are exact
    owners = ("alice", "bob", "charlie")
    for i in range(60):
        write(owners[i % 3], i, conversation=f"c{i % 2}")
    result = run_cycle(batch_size=5, flush_rows=20)  # three flushes of four chunks
    assert result.rows_folded == 60
    assert result.sessions_written == 6 * 3  # every session touched in each of the 3 flushes
    assert result.session_rows_read == 6 * 2  # flushes 2 and 3 read what flush 1 wrote
    assert ProjectionShard.objects.get(shard=0).last_cycle_rows == 20  # the last flush's rows
    incremental = (session_rows(), episode_rows())
    rebuild()
    assert (session_rows(), episode_rows()) == incremental


# --- episodes end by the world clock in the cycle, not only in a rebuild (issue 13.1) ----------


def test_run_projections_closes_episodes_the_world_clock_has_passed(cast):
    cast.world.clock_iso = "2026-07-06T12:30:00.000Z"
    cast.world.save(update_fields=["clock_iso"])
    write("alice", 0)  # 12:00, within the 30-minute gap of the clock: stays open
    write("bob", -45)  # 11:15: the clock is 75 minutes past it
    call_command("run_projections", stdout=io.StringIO())
    assert dict(Episode.objects.values_list("owner_id", "is_open")) == {"alice": True, "bob": False}
    # The clock moves on with no new row: the next cycle notices and closes alice's too.
    cast.world.clock_iso = "2026-07-06T13:00:00.001Z"
    cast.world.save(update_fields=["clock_iso"])
    result = run_cycle()
    assert (result.rows_folded, result.episodes_closed, result.episode_rows_read) == (0, 1, 1)
    assert dict(Episode.objects.values_list("owner_id", "is_open")) == {
        "alice": False,
        "bob": False,
    }
    # A clock that stays still costs nothing.
    assert run_cycle().rows_visited == 0
    incremental = episode_rows()
    rebuild()
    assert episode_rows() == incremental


def test_verify_reports_episode_drift_alone_and_exits_1(cast):
    write("alice", 0)
    write("alice", 1)
    run_cycle()
    Episode.objects.filter(owner_id="alice").update(member_count=5)
    result = verify()
    assert result.drift == []
    assert result.episode_drift == [
        {"owner_id": "alice", "ordinal": 1, "field": "member_count", "stored": 5, "rebuilt": 2}
    ]
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("rebuild_projections", "--verify", "--json", stdout=out)
    assert exited.value.code == 1
    assert json.loads(out.getvalue())["episodes"]["drift"][0]["field"] == "member_count"


# --- the fold's hot loops (issue 12): shortcuts that must not change a term ---------------------

_STAMPS = [
    "2026-07-06T12:38:00.000Z",
    "2026-07-06T12:38:00.500Z",
    "2026-07-06T14:00:00.000Z",
    "2026-07-06T12:38:00Z",
    "2026-07-06T14:38:00+02:00",
    "2026-07-06T12:38:00.12Z",  # toISOString-length, but not its form
    "2026-07-06T12:38:00.12ZZ",
    "2026-13-45T25:00:00.000Z",  # toISOString-shaped, no real time: untimed
    "yesterday",  # untimed
    "",
]


@given(st.one_of(st.sampled_from(_STAMPS), st.text(max_size=30)))
def test_keyed_is_time_key_and_the_moment_it_names(timestamp):
    from memory.engine.clock import keyed, moment_of_key, time_key

    key = time_key(timestamp)
    assert keyed(timestamp) == (key, moment_of_key(key))


_fold_op = st.tuples(
    st.sampled_from(_STAMPS + ["2026-07-06T15:30:00.000Z", "2026-07-06T12:00:00.000Z"]),
    st.sampled_from([None, "", "c1", "c2", "scene:hall"]),
    st.sampled_from([None, "hall", "yard"]),
    st.sampled_from(["dialogue", "action"]),
)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(_fold_op, min_size=1, max_size=25))
def test_batch_folds_of_read_rows_equal_the_row_by_row_fold(ops):
    """fold_owner and segment over rows as read (key and moment computed once, rows unpacked,
    a run of one session's rows sharing its terms) give exactly fold_session and step."""
    raw = [
        (f"m{i:03d}", "alice", ts, loc, conv, json.dumps({"type": kind}), i, 0)
        for i, (ts, conv, loc, kind) in enumerate(ops)
    ]
    by_hand = [FoldRow(*r) for r in raw]
    read = [_fold_row(r) for r in raw]
    sessions: dict[str, Any] = {}
    latest = None
    walked = []
    for r in by_hand:
        skey = session_key_of(r.conversation_id, r.location_id)
        sessions[skey] = fold_session(sessions.get(skey), r)
        closed, latest = episodes.step(latest, r)
        if closed is not None:
            walked.append(closed)
    walked.append(latest)
    for rows in (by_hand, read):
        assert fold_owner(rows) == sessions
        assert episodes.segment(rows) == walked
