"""The pages' live cue: GET /live/ (the version, 304 while unchanged) and what a follow
applies in-process (the same Follower the command runs), seen through the API twin."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memory.models import LiveFollow
from memory.worlds.live import Follower
from memory.worlds.standin import StandIn


@pytest.mark.django_db
def test_live_version_needs_a_login(client):
    response = client.get("/live/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_live_version_answers_304_until_something_is_applied(
    reader_client, tmp_path, activate_save
):
    first = reader_client.get("/live/")
    assert first.status_code == 200
    assert first.json() == {
        "follows": 0, "live": False, "version": "0.0", "updated_at": None,
        "heartbeat_at": None, "age_s": None,
    }  # fmt: skip
    tag = first["ETag"]
    assert reader_client.get("/live/", headers={"If-None-Match": tag}).status_code == 304
    game = StandIn(tmp_path / "game.sqlite", seed=1)
    game.run(40, 0)
    follower = Follower(tmp_path / "game.sqlite", name="t")
    assert follower.tick() is not None
    moved = reader_client.get("/live/", headers={"If-None-Match": tag})
    assert moved.status_code == 200 and moved["ETag"] != tag
    body = moved.json()
    assert body["follows"] == 1 and body["version"] == "1.2" and body["live"] is True
    again = reader_client.get("/live/", headers={"If-None-Match": moved["ETag"]})
    assert again.status_code == 304 and again.content == b""
    assert follower.tick() is None  # nothing new in the file: nothing applied, no new version
    assert reader_client.get("/live/", headers={"If-None-Match": moved["ETag"]}).status_code == 304
    activate_save("t")
    LiveFollow.objects.update(heartbeat_at=timezone.now() - timezone.timedelta(minutes=1))
    stopped = reader_client.get("/live/", headers={"If-None-Match": moved["ETag"]})
    assert stopped.status_code == 200 and stopped.json()["live"] is False
    game.close()


@pytest.mark.django_db
def test_a_new_row_and_a_planted_leak_reach_the_api_after_one_tick(reader_client, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=2, delete_every=0)
    game.run(20, 0)
    follower = Follower(tmp_path / "game.sqlite")
    follower.tick()
    before = reader_client.get("/api/saves/game/viewers/mara/buffer?limit=200").json()
    assert reader_client.get("/api/saves/game/leaks?viewer=mara").json()["items"] == []
    ids = game.plant_leak()
    result = follower.tick()
    assert result.added["buffer_entries"] == len(ids)
    after = reader_client.get("/api/saves/game/viewers/mara/buffer?limit=200").json()
    new = [e for e in after["items"] if e["id"] not in {b["id"] for b in before["items"]}]
    assert [e["line"] for e in new] == ["I say 'They call him Tobin Reed'"]
    leaks = reader_client.get("/api/saves/game/leaks?viewer=mara").json()["items"]
    assert [(f["text"], f["entity_id"]) for f in leaks] == [("Tobin Reed", "tobin")]
    game.close()


@pytest.mark.django_db
def test_the_marker_and_the_live_regions_are_on_the_pages(reader_client, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=3)
    game.run(10, 0)
    Follower(tmp_path / "game.sqlite").tick()
    viewer = reader_client.get("/saves/game/viewers/mara/").content.decode()
    assert 'data-live-url="/live/?save=game" data-live-save hidden>' in viewer
    assert "memory/js/live.js" in viewer
    for panel in ("buffer-panel", "sessions-panel", "aliases-panel"):
        start = viewer.index(f'id="{panel}"')
        assert "data-live-refresh" in viewer[start : viewer.index(">", start)]
    leaks = reader_client.get("/saves/game/leaks/").content.decode()
    start = leaks.index('id="leak-table"')
    assert 'hx-trigger="live-changed"' in leaks[start : leaks.index(">", start)]
    overview = reader_client.get("/saves/game/").content.decode()
    assert 'id="leak-counts"' in overview and 'id="projection-panel"' in overview
    game.close()


@pytest.mark.django_db
def test_live_version_of_one_save_and_the_marker_only_there(reader_client, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=5)
    game.run(10, 0)
    Follower(tmp_path / "game.sqlite").tick()
    mine = reader_client.get("/live/?save=game").json()
    assert (mine["follows"], mine["live"], mine["version"]) == (1, True, "1.2")
    other = reader_client.get("/live/?save=nobody-follows-this").json()
    assert other == {
        "follows": 0, "live": False, "version": "0.0", "updated_at": None,
        "heartbeat_at": None, "age_s": None,
    }  # fmt: skip
    # Pages over every save poll everything and show no marker (no data-live-save).
    overview = reader_client.get("/").content.decode()
    assert '<div class="live-marker" data-live-url="/live/" hidden>' in overview
    game.close()
