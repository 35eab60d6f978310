"""What only a real PostgreSQL can prove: concurrent workers never fold a row twice, and two
concurrent abstracts over one member land exactly once. Skipped on SQLite (its single writer
lock serialises everything); these MUST run in the PostgreSQL run."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections

from memory.engine.abstract import AbstractConflict, abstract
from memory.engine.projections import rebuild, run_cycle
from memory.engine.shards import generation_of
from memory.models import AbstractionEdge, LedgerEntry
from tests.helpers import episode_rows, session_rows, write

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def in_threads(count: int, work: Callable[[int], object]) -> list[object]:
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except Exception as exc:  # the assertion below names it
            results[i] = exc
        finally:
            connections.close_all()

    # A thread starts with an empty context: each runs in a copy of ours, active save and all.
    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(run, i)) for i in range(count)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_concurrent_cycles_fold_each_row_exactly_once(cast):
    owners = ("alice", "bob", "charlie")
    for i in range(120):
        write(owners[i % 3], i % 50, conversation=f"c{i % 7}" if i % 2 else None)
    results = in_threads(4, lambda i: run_cycle(batch_size=7))
    assert not [r for r in results if isinstance(r, Exception)]
    assert sum(r.rows_folded for r in results) == 120
    concurrent_sessions, concurrent_episodes = session_rows(), episode_rows()
    rebuild()
    assert session_rows() == concurrent_sessions
    assert episode_rows() == concurrent_episodes
    assert sum(r[4] for r in concurrent_sessions) == 120


def test_concurrent_abstracts_over_one_member_land_exactly_once(cast):
    member = write("alice", 0)
    generation = generation_of("alice")
    results = in_threads(
        2,
        lambda i: abstract(
            "alice",
            [member],
            name=f"rollup {i}",
            body="b",
            expected_generation=generation,
            rollup_id=f"R{i}",
        ),
    )
    landed = [r for r in results if isinstance(r, LedgerEntry)]
    conflicts = [r for r in results if isinstance(r, AbstractConflict)]
    assert (len(landed), len(conflicts)) == (1, 1), results
    assert list(AbstractionEdge.objects.values_list("member_id", "rollup_id")) == [
        (member, landed[0].id)
    ]
    assert LedgerEntry.objects.count() == 1
    assert generation_of("alice") == generation + 1
