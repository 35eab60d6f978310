"""Changing OMNIA_PROJECTION_SHARDS never strands a row (issue 13, item 5): the next cycle
finds the rows partitioned for another count and re-partitions in one transaction (a rebuild:
watermarks recomputed, nothing folded twice), and `rebuild_projections --verify` reports any
row no shard will fold."""

from __future__ import annotations

import io
import json

from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from memory.engine.clock import now_us
from memory.engine.projections import rebuild
from memory.engine.shards import shard_of
from memory.models import BufferEntry, MemorySession, ProjectionShard, WorldObject
from tests.helpers import at, episode_rows, session_rows, write


def owners_in_every_shard(world, shards: int) -> list[str]:
    chosen: dict[int, str] = {}
    i = 0
    while len(chosen) < shards:
        chosen.setdefault(shard_of(f"npc-{i}", shards), f"npc-{i}")
        i += 1
    for owner in chosen.values():
        WorldObject.objects.create(
            id=owner, type="entity", world_id=world.id, location_id="tavern-main"
        )
    return sorted(chosen.values())


def run(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command(*args, "--json", stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), json.loads(out.getvalue())
    return 0, json.loads(out.getvalue())


def counts() -> dict[str, int]:
    return {
        owner: sum(
            MemorySession.objects.filter(owner_id=owner).values_list("memory_count", flat=True)
        )
        for owner in MemorySession.objects.values_list("owner_id", flat=True).distinct()
    }


def check_partitioned(shards: int) -> None:
    assert list(ProjectionShard.objects.order_by("shard").values_list("shard", "layout")) == [
        (s, shards) for s in range(shards)
    ]
    for owner_id, shard in BufferEntry.objects.values_list("owner_id", "shard"):
        assert shard == shard_of(owner_id, shards)


def test_lowering_the_shard_count_repartitions_and_strands_nothing(cast):
    with override_settings(OMNIA_PROJECTION_SHARDS=4):
        owners = owners_in_every_shard(cast.world, 4)
        for owner in owners:
            write(owner, 0)
        assert run("run_projections")[0] == 0
        for owner in owners:
            write(owner, 1)  # not folded yet when the count changes
    with override_settings(OMNIA_PROJECTION_SHARDS=2):
        behind = BufferEntry.objects.filter(shard__gte=2).count()
        assert behind == 4  # two owners' two rows each sit in shards 2 and 3
        code, report = run("rebuild_projections", "--verify")
        assert code == 1
        assert report["shards"] == {"configured": 2, "stored": 4, "stranded_rows": behind}
        for owner in owners:
            write(owner, 2)  # written under the new count
        code, cycle = run("run_projections")
        assert (code, cycle["repartitioned"]) == (0, True)
        check_partitioned(2)
        assert counts() == dict.fromkeys(owners, 3)
        incremental = (session_rows(), episode_rows())
        code, report = run("rebuild_projections", "--verify")
        assert code == 0
        assert report["shards"] == {"configured": 2, "stored": 2, "stranded_rows": 0}
        # Nothing is folded twice: the next cycle reads nothing, a rebuild agrees.
        assert run("run_projections")[1]["rows_visited"] == 0
        for owner in owners:
            write(owner, 3)
        assert run("run_projections")[1]["rows_folded"] == len(owners)
        assert counts() == dict.fromkeys(owners, 4)
        incremental = (session_rows(), episode_rows())
        rebuild()
        assert (session_rows(), episode_rows()) == incremental


def test_healthz_is_degraded_until_a_changed_shard_count_is_repartitioned(cast, client):
    with override_settings(OMNIA_PROJECTION_SHARDS=4):
        write("alice", 0)
        run("run_projections")
        assert client.get("/healthz").json()["status"] == "ok"
    with override_settings(OMNIA_PROJECTION_SHARDS=2):
        body = client.get("/healthz").json()
        assert (body["status"], body["shard_count"]) == (
            "degraded",
            {"configured": 2, "stored": 4},
        )
        run("run_projections")
        body = client.get("/healthz").json()
        assert (body["status"], body["shard_count"]) == ("ok", {"configured": 2, "stored": 2})


def test_raising_the_shard_count_repartitions_too(cast):
    with override_settings(OMNIA_PROJECTION_SHARDS=2):
        owners = owners_in_every_shard(cast.world, 8)
        for owner in owners:
            write(owner, 0)
        run("run_projections")
    with override_settings(OMNIA_PROJECTION_SHARDS=8):
        for owner in owners:
            write(owner, 1)  # new rows land in the new shards, old ones in the old
        assert run("rebuild_projections", "--verify")[1]["shards"]["stored"] == 2
        assert run("run_projections")[0] == 0
        check_partitioned(8)
        assert counts() == dict.fromkeys(owners, 2)
        code, report = run("rebuild_projections", "--verify")
        assert (code, report["drift"], report["episodes"]["drift"]) == (0, [], [])


def test_rebuild_projections_repartitions_as_the_cycle_does(cast):
    with override_settings(OMNIA_PROJECTION_SHARDS=4):
        owners = owners_in_every_shard(cast.world, 4)
        for owner in owners:
            write(owner, 0)
    with override_settings(OMNIA_PROJECTION_SHARDS=3):
        assert run("rebuild_projections")[0] == 0
        check_partitioned(3)
        assert counts() == dict.fromkeys(owners, 1)
        assert run("rebuild_projections", "--verify")[0] == 0


def test_verify_catches_a_row_in_a_shard_no_cycle_visits(cast):
    write("alice", 0)
    run("run_projections")
    with connection.cursor() as cursor:  # written around the doors, into shard 9 of 4
        cursor.execute(
            "INSERT INTO buffer_entries (game_save_id, id, owner_id, timestamp, intent_json, "
            "created_at, shard) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [cast.alice.game_save_id, "stray", "alice", at(1), '{"type": "action"}', now_us(), 9],
        )
    code, report = run("rebuild_projections", "--verify")
    assert (code, report["shards"]) == (1, {"configured": 4, "stored": 4, "stranded_rows": 1})
    out = io.StringIO()
    try:
        call_command("rebuild_projections", "--verify", stdout=out)
    except SystemExit as exc:
        assert exc.code == 1
    assert (
        "shards: 4 configured, rows partitioned for 4, 1 row(s) in no visited shard\n"
        in out.getvalue()
    )
    # A rebuild moves it home and folds it; verify is clean again.
    assert run("rebuild_projections")[1]["rows_moved"] == 1
    assert BufferEntry.objects.get(id="stray").shard == shard_of("alice")
    assert counts() == {"alice": 2}
    assert run("rebuild_projections", "--verify")[0] == 0
