"""Episodes: a forward-only walk cut by gaps in world time; open until the clock passes."""

from __future__ import annotations

from memory.engine.projections import episodes, rebuild, run_cycle
from memory.models import Episode
from tests.helpers import at, episode_rows, write


def test_episode_gap_more_than_thirty_minutes_cuts(cast):
    a = write("alice", 0)
    b = write("alice", 30)  # exactly the gap: same episode
    c = write("alice", 61)  # 31 minutes after b: a new one
    result = run_cycle()
    assert result.episodes_written == 2
    assert episode_rows() == [
        ("alice", 1, at(0), at(30), a, b, 2, False),
        ("alice", 2, at(61), at(61), c, c, 1, True),
    ]


def test_episode_row_earlier_in_world_time_joins_the_open_episode(cast):
    a = write("alice", 20)
    b = write("alice", 0)
    run_cycle()
    assert episode_rows() == [("alice", 1, at(0), at(20), a, b, 2, True)]


def test_episode_walk_continues_across_cycles(cast):
    a = write("alice", 0)
    run_cycle()
    b = write("alice", 10)
    result = run_cycle()
    assert (result.episode_rows_read, result.episodes_written) == (1, 1)
    c = write("alice", 100)
    run_cycle()
    assert episode_rows() == [
        ("alice", 1, at(0), at(10), a, b, 2, False),
        ("alice", 2, at(100), at(100), c, c, 1, True),
    ]


def test_episode_gap_follows_the_setting(cast, settings):
    settings.OMNIA_EPISODE_GAP_MINUTES = 5
    write("alice", 0)
    write("alice", 6)
    run_cycle()
    assert [r[1] for r in episode_rows()] == [1, 2]


def test_close_expired_closes_when_the_world_clock_passes_end_plus_gap(cast):
    write("alice", 0)
    write("bob", 20)
    run_cycle()
    assert episodes.close_expired(at(30)) == 0  # exactly end + gap: not past it
    assert episodes.close_expired("2026-07-06T12:30:00.001Z") == 1
    assert dict(Episode.objects.values_list("owner_id", "is_open")) == {"alice": False, "bob": True}


def test_close_expired_only_touches_the_named_world(cast):
    write("alice", 0)
    run_cycle()
    assert episodes.close_expired(at(90), world_id="elsewhere") == 0
    assert episodes.close_expired(at(90), world_id="tavern") == 1


def test_a_row_within_the_gap_reopens_a_clock_closed_episode_as_rebuild_would(cast):
    a = write("alice", 0)
    run_cycle()
    episodes.close_expired(at(45))
    b = write("alice", 20)  # written late, within the gap of the episode's end
    run_cycle()
    assert episode_rows() == [("alice", 1, at(0), at(20), a, b, 2, True)]
    episodes.close_expired(at(55))
    incremental = episode_rows()
    rebuild()
    episodes.close_expired(at(55))
    assert episode_rows() == incremental == [("alice", 1, at(0), at(20), a, b, 2, False)]


def test_rebuild_closes_episodes_the_world_clock_has_passed(cast):
    cast.world.clock_iso = at(120)
    cast.world.save()
    write("alice", 0)
    write("bob", 100)
    rebuild()
    assert dict(Episode.objects.values_list("owner_id", "is_open")) == {"alice": False, "bob": True}
