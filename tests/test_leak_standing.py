"""What the overview, a save's page and the leak report say of the stored leak findings follows
every door that moves a prompt's inputs, at once (issue 25).

The pages learn which viewers are behind from the scan rows' flag the doors keep
(memory.engine.leaks.standing), not by recomputing every viewer's inputs. So each door is walked
here twice: with the pages' in-memory rescan switched off (FRESH_BUDGET = 0), the page says
exactly which viewers wait for a scan, and after the next upkeep it shows the change; with it
on (the default), the page shows the change before any upkeep runs.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command

from memory import services
from memory.active_save import use
from memory.engine.leaks import standing, stored
from memory.engine.upkeep import run_upkeep
from memory.models import BufferEntry, LeakFinding, Save
from memory.selectors import leaks
from memory.worlds.live import Follower
from memory.worlds.standin import StandIn

SABLE = "Sable Quint"
ISOLDE = "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"  # the demo's one viewer with a uuid for an id
# The demo world's findings once scanned: (viewer, kind, text).
DEMO_FINDINGS = [
    (ISOLDE, "private_attribute", "two short flashes and one long means the quay is clear"),
    (ISOLDE, "system_id", "npc-sable"),
    ("npc-oswin", "system_id", "npc-sable"),
    ("npc-pip", "unknown_name", SABLE),
]


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def overview_line(client, save: str = "demo") -> str:
    """The overview's "open leaks" line of a save, as a person reads it."""
    page = client.get("/").content.decode()
    section = page[page.index(f'data-save="{save}"') :]
    return _text(re.search(r'<dd class="leak-count">(.*?)</dd>', section, re.S).group(1))


def save_counts(client, save: str = "demo") -> tuple[list[str], list[str]]:
    """A save page's leak table (one "viewer n n n n n total" line per row: system_id,
    unknown_name, private_attribute, raw_tag, unresolved_tag) and the notes around it."""
    page = client.get(f"/saves/{save}/").content.decode()
    panel = page[page.index('id="leak-counts"') : page.index('id="projection-panel"')]
    rows = [_text(r) for r in re.findall(r'<tr data-viewer="[^"]*">(.*?)</tr>', panel, re.S)]
    # omnia's quiet line flaws (issue 30) have their own note, tested in test_readings.py.
    notes = re.findall(r'<p(?! class="small muted omnia-flaws")[^>]*>(.*?)</p>', panel, re.S)
    return rows, [_text(p) for p in notes]


def reported(client, save: str = "demo") -> list[tuple[str, str, str]]:
    items = client.get(f"/saves/{save}/leaks/?format=json").json()["items"]
    return sorted((f["viewer_id"], f["kind"], f["text"]) for f in items)


@pytest.fixture
def scanned(demo, reader_client):
    """The demo world with every viewer's findings stored and current."""
    stored.refresh()
    assert standing.standing().behind == []
    assert overview_line(reader_client) == "4 in 3 viewers"
    assert reported(reader_client) == DEMO_FINDINGS
    return reader_client


@pytest.fixture
def no_fresh_scan(monkeypatch):
    """Pages show stored findings only: whoever is behind is listed as pending."""
    monkeypatch.setattr(leaks, "FRESH_BUDGET", 0)


def _remember(owner: str, text: str, minute: int) -> str:
    done = services.remember_memory(
        owner,
        intent={
            "type": "dialogue",
            "originalText": text,
            "description": text,
            "actorId": owner,
            "targetIds": [],
        },
        timestamp=f"2027-01-01T00:{minute:02d}:00.000Z",
    )
    return done.entry.id


# --- the doors, one by one --------------------------------------------------------------------


def test_an_alias_edit_on_the_viewer_page_shows_on_every_leak_page(scanned, editor_client):
    edit = "/saves/demo/viewers/npc-pip/aliases/npc-sable/"
    assert editor_client.post(edit, {"label": SABLE, "action": "set"}).status_code in (200, 302)
    # Rescanned in the edit's own transaction: current, and the finding is gone.
    assert standing.standing().behind == []
    assert overview_line(scanned) == "3 in 2 viewers"
    assert reported(scanned) == DEMO_FINDINGS[:3]
    rows, notes = save_counts(scanned)
    assert rows == [
        # (no raw or unresolved tag in the demo's prompts: no column for them)
        f"Isolde Varga {ISOLDE} 1 0 1 2",
        "Maren Holloway npc-maren 0 0 0 0",
        "Oswin Marl npc-oswin 1 0 0 1",
        "Pip Dunn npc-pip 0 0 0 0",
        f"{SABLE} npc-sable 0 0 0 0",
        "Tobiah Crane npc-tobiah 0 0 0 0",
    ]
    assert notes == []


def test_a_memory_written_makes_its_owner_pending_then_the_upkeep_shows_its_leak(
    scanned, no_fresh_scan
):
    _remember("npc-pip", "npc-maren owes me", 1)
    assert standing.standing().behind == ["npc-pip"]
    assert overview_line(scanned) == "3 in 2 viewers (1 not scanned yet)"
    rows, notes = save_counts(scanned)
    assert [r for r in rows if "npc-pip" in r] == []  # not known: not listed
    assert notes == [
        "1 viewer not scanned since its memories or world changed: the next projection cycle "
        "( run_projections ) scans it.",
    ]
    assert reported(scanned) == DEMO_FINDINGS[:3]
    run_upkeep()
    assert overview_line(scanned) == "5 in 3 viewers"
    assert reported(scanned) == sorted([*DEMO_FINDINGS, ("npc-pip", "system_id", "npc-maren")])


def test_a_memory_written_shows_at_once_when_the_page_may_rescan(scanned):
    _remember("npc-pip", "npc-maren owes me", 1)
    assert overview_line(scanned) == "5 in 3 viewers"
    assert reported(scanned) == sorted([*DEMO_FINDINGS, ("npc-pip", "system_id", "npc-maren")])
    assert LeakFinding.objects.filter(viewer_id="npc-pip").count() == 1  # a page never writes


def test_a_retracted_memory_is_pending_until_rescanned(scanned, no_fresh_scan):
    entry = _remember("npc-pip", "npc-maren owes me", 1)
    run_upkeep()
    assert overview_line(scanned) == "5 in 3 viewers"
    services.retract_memory(entry)
    assert overview_line(scanned) == "3 in 2 viewers (1 not scanned yet)"
    run_upkeep()
    # A retracted memory stays in the prompt, marked (it still happened): so does its leak.
    assert overview_line(scanned) == "5 in 3 viewers"


def _demo_with_sable_name_shared_with_pip() -> dict:
    from memory.worlds.demo import DEMO_PATH

    doc = json.loads(DEMO_PATH.read_text())
    sable = next(e for e in doc["entities"] if e["id"] == "npc-sable")
    name = next(a for a in sable["attributes"] if a["name"] == "name")
    name["allowedEntities"] = [*name.get("allowedEntities", []), "npc-pip"]
    return doc


def test_an_import_over_the_save_is_pending_until_scanned(scanned, no_fresh_scan, activate_save):
    from memory.worlds.scenario import load_world

    # The world's way in shares Sable's name with Pip: his prompt may say it now.
    load_world(_demo_with_sable_name_shared_with_pip(), as_name="demo", replace=True)
    activate_save("demo")  # the new save under the name: the one upkeep below works in
    assert overview_line(scanned) == "0 (6 not scanned yet)"
    rows, notes = save_counts(scanned)
    assert rows == []
    assert notes == [
        "No viewer scanned yet.",
        "6 viewers not scanned since their memories or world changed: the next projection "
        "cycle ( run_projections ) scans them.",
    ]
    run_upkeep()
    assert overview_line(scanned) == "3 in 2 viewers"
    assert reported(scanned) == DEMO_FINDINGS[:3]


def test_an_import_over_the_save_shows_at_once_when_the_page_may_rescan(scanned):
    from memory.worlds.scenario import load_world

    load_world(_demo_with_sable_name_shared_with_pip(), as_name="demo", replace=True)
    assert overview_line(scanned) == "3 in 2 viewers"
    assert reported(scanned) == DEMO_FINDINGS[:3]


def test_a_rebuild_rewrites_what_the_pages_read(scanned):
    # The pages read what is stored while it is current: a finding changed in storage shows...
    LeakFinding.objects.filter(viewer_id="npc-oswin").update(text="tampered")
    assert reported(scanned) == sorted([*DEMO_FINDINGS[:2], ("npc-oswin", "system_id", "tampered"),
                                        DEMO_FINDINGS[3]])  # fmt: skip
    # ...until a rebuild derives every finding again from the store alone.
    call_command("rebuild_projections", stdout=io.StringIO())
    assert reported(scanned) == DEMO_FINDINGS
    assert overview_line(scanned) == "4 in 3 viewers"


# --- the live follower ------------------------------------------------------------------------


@pytest.fixture
def game(db, tmp_path):
    """A game writing its save, followed into the save `game` and scanned."""
    game = StandIn(tmp_path / "game.sqlite", seed=2, delete_every=0, alias_every=0)
    game.run(20, 0)
    follower = Follower(tmp_path / "game.sqlite")
    follower.tick()
    yield game, follower
    game.close()


# The stand-in's planted line ("They call him Tobin Reed"), in the prompt of each witness.
PLANTED = [("ilse", "unknown_name", "Tobin Reed"), ("mara", "unknown_name", "Tobin Reed")]


def _tick_without_follow_up(follower: Follower, monkeypatch) -> None:
    """One batch applied and readable, as pages see it before the follower's follow-up (the
    fold and the rescan) has run."""
    with monkeypatch.context() as patch:
        patch.setattr(Follower, "follow_up", lambda self, result=None: result)
        assert follower.tick() is not None


def test_rows_the_game_writes_are_pending_until_the_follow_up(
    game, reader_client, no_fresh_scan, monkeypatch
):
    game, follower = game
    assert overview_line(reader_client, "game") == "0"
    game.plant_leak()
    _tick_without_follow_up(follower, monkeypatch)
    with use(Save.objects.get(name="game")):
        written = sorted(set(BufferEntry.objects.values_list("owner_id", flat=True)))
        behind = standing.standing().behind
    # Every owner the batch wrote a row for (a row per witness), and no other.
    assert behind and set(behind) <= set(written)
    assert overview_line(reader_client, "game") == f"0 ({len(behind)} not scanned yet)"
    follower.follow_up()
    # The line is in the prompt of each witness: Ilse heard it too.
    assert overview_line(reader_client, "game") == "2 in 2 viewers"
    assert reported(reader_client, "game") == PLANTED


def test_a_world_change_the_game_makes_puts_every_viewer_behind(game, reader_client, monkeypatch):
    game, follower = game
    game.plant_leak()
    follower.tick()
    assert reported(reader_client, "game") == PLANTED
    # The game teaches Mara his name: her aliases change in the file's small tables.
    game.conn.execute(
        "UPDATE objects SET aliases_json = ? WHERE id = 'mara'",
        [json.dumps([["tobin", "Tobin Reed"]])],
    )
    _tick_without_follow_up(follower, monkeypatch)
    with use(Save.objects.get(name="game")):
        agents = standing.standing()
    assert (agents.current, len(agents.behind)) == (0, agents.viewers)
    # The page rescans those it may: Mara's leak is gone before the follower's own rescan.
    assert overview_line(reader_client, "game") == "1 in 1 viewer"
    assert reported(reader_client, "game") == PLANTED[:1]
    with monkeypatch.context() as patch:
        patch.setattr(leaks, "FRESH_BUDGET", 0)
        assert overview_line(reader_client, "game") == f"0 ({agents.viewers} not scanned yet)"
        follower.follow_up()
        assert overview_line(reader_client, "game") == "1 in 1 viewer"
    assert reported(reader_client, "game") == PLANTED[:1]
