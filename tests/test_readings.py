"""Two readings of every buffer line (issue 30): *omnia*, byte-identical to what omnia's own
renderer put in the NPC's prompt (HEAD's `hydrate` for the later era, 74ffb45's serializer for
the earlier), and *corrected*, omnia's later-era bugs put right; and omnia's flaws as findings.
"""

from __future__ import annotations

import io
import json
import re
from difflib import SequenceMatcher

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import strategies as st

from memory.engine.buffer import render_stored_entry
from memory.engine.buffer.flaws import Flaw, differing_runs, line_flaws
from memory.engine.leaks import stored
from memory.engine.write_door import remember
from memory.models import LeakScan, WorldObject
from memory.selectors import leaks as leak_reads
from memory.worlds.omnia_import import import_omnia
from tests.helpers import FIXTURES, at
from tests.test_buffer import _expected, _world


@pytest.mark.parametrize(("era", "rows"), [("head", 30), ("74ffb45", 36)])
def test_omnia_reading_is_omnias_own_line_for_every_viewer(era, rows) -> None:
    viewers, stored, _ = _world(era)
    expected = _expected(era)
    got = [
        {
            **row,
            "line": render_stored_entry(*stored[row["entry_id"]], viewers[row["viewer"]], "omnia"),
        }
        for row in expected
    ]
    assert got == expected
    assert len(expected) == rows


def test_v1_lines_read_the_same_in_both_readings() -> None:
    viewers, stored, _ = _world("74ffb45")
    for row in _expected("74ffb45"):
        args = (*stored[row["entry_id"]], viewers[row["viewer"]])
        assert render_stored_entry(*args, "omnia") == render_stored_entry(*args, "corrected")


# Few distinct words, so repeats (where an alignment has to choose) are the common case.
_WORDS = st.lists(st.sampled_from(["I", "say", "says", "him", "Ada", "the", "figure"]), max_size=12)


@given(_WORDS, _WORDS)
def test_the_flaw_diff_is_difflibs_without_junk(a, b) -> None:
    expected = [
        (i1, i2, j1, j2)
        for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if op != "equal"
    ]
    assert differing_runs(a, b) == expected


def test_each_kind_of_flaw_is_named_with_its_span_and_the_corrected_words() -> None:
    assert line_flaws(
        "The traveller waves at entity@I[the hooded figure] (Outcome: Succeeded)",
        "The traveller waves at me (Outcome: Succeeded)",
    ) == (Flaw("raw_tag", 23, 50, "entity@I[the hooded figure]", "me"),)
    assert line_flaws(
        "The hooded figure sees entity@alice (Outcome: Succeeded)",
        "The hooded figure sees an unfamiliar figure (Outcome: Succeeded)",
    ) == (Flaw("unresolved_tag", 23, 35, "entity@alice", "an unfamiliar figure"),)
    assert line_flaws(
        "I say 'Halt! Who goes there?' to him",
        "I say 'Halt! Who goes there?' to an unfamiliar figure",
    ) == (Flaw("unheld_label", 33, 36, "him", "an unfamiliar figure"),)
    assert line_flaws("Gareth wills stay", "Gareth will stay") == (
        Flaw("grammar", 7, 12, "wills", "will"),
    )
    # A tag the corrected reading happens to agree with is a flaw all the same.
    assert line_flaws("Entity@bob waves", "Entity@bob waves") == (
        Flaw("unresolved_tag", 0, 10, "Entity@bob", ""),
    )
    assert line_flaws("I wave", "I wave") == ()
    assert line_flaws(None, "I wave") == ()


# Each case: a v2 row written into the viewer's buffer, and the line omnia's `hydrate` gives
# it by PRODUCT §4's upstream rules (as ported in memory/engine/buffer/as_omnia.py). The cast:
# alice knows bob as "the hooded figure", charlie as "the bartender"; bob knows alice as "the
# traveller"; charlie knows bob as "Gareth" and alice by an empty label.
CASES = [
    pytest.param(
        "charlie",
        "alice",
        "action",
        "entity@alice[I] give the key to entity@bob[him]",
        "Gives the key to him (Outcome: Succeeded)",
        id="third_person_bracket_kept_for_others",
    ),
    pytest.param(
        "alice",
        "bob",
        "action",
        "entity@bob[I] bow to entity@alice[her]",
        "The hooded figure bow to my (Outcome: Succeeded)",
        id="object_her_read_by_herself_is_my",
    ),
    pytest.param(
        "bob",
        "alice",
        "action",
        "entity@alice[I] wave at entity@bob[the stranger]",
        "The traveller waves at me (Outcome: Succeeded)",
        id="self_tag_after_a_preposition_is_me",
    ),
    pytest.param(
        "bob", "bob", "monologue", "entity@bob[Gareth] nod", "I nod", id="self_tag_as_subject_is_I"
    ),
    pytest.param(
        "alice",
        "charlie",
        "action",
        "entity@charlie[I] point at entity@entity@bob[bob][the man]",
        "The bartender points at entity@the hooded figure[the man] (Outcome: Succeeded)",
        id="nested_tag_hydrates_inside_and_leaves_the_rest",
    ),
    pytest.param(
        "charlie",
        "alice",
        "dialogue",
        'entity@alice[I] say "Hi" to entity@charlie[him]',
        "Says 'Hi' to me",
        id="empty_alias_actor",
    ),
    pytest.param(
        "alice",
        "bob",
        "action",
        "entity@bob[I]\twait",
        "The hooded figure waits (Outcome: Succeeded)",
        id="tab_after_a_tag_is_one_space",
    ),
    pytest.param(
        "alice",
        "bob",
        "action",
        "entity@bob[I]\nmust go",
        "The hooded figure musts go (Outcome: Succeeded)",
        id="newline_after_a_tag_is_one_space",
    ),
    pytest.param(
        "charlie",
        "bob",
        "monologue",
        "entity@bob[I] will stay",
        "Gareth wills stay",
        id="will_becomes_wills",
    ),
    pytest.param(
        "charlie",
        "bob",
        "action",
        "entity@bob[I] shrug",
        "Gareth shrug (Outcome: Succeeded)",
        id="a_verb_compromise_does_not_know_stays",
    ),
    pytest.param(
        "charlie",
        "bob",
        "action",
        "entity@bob[I] lose entity@bob[my] hat",
        "Gareth loses Gareth's hat (Outcome: Succeeded)",
        id="my_of_another_is_their_label_s",
    ),
    pytest.param(
        "alice",
        "bob",
        "action",
        "entity@bob[I] hurt entity@bob[myself]",
        "The hooded figure hurts himself (Outcome: Succeeded)",
        id="myself_of_another_is_himself",
    ),
    pytest.param(
        "charlie",
        "alice",
        "action",
        "entity@alice[she] smile",
        "She smiles (Outcome: Succeeded)",
        id="she_is_kept_and_agrees",
    ),
    pytest.param(
        "charlie",
        "bob",
        "action",
        "entity@bob[I] Say hi",
        "Gareth Say hi (Outcome: Succeeded)",
        id="a_capitalised_verb_is_left",
    ),
    pytest.param(
        "alice",
        "bob",
        "dialogue",
        'entity@bob[I] whisper "entity@alice[you]"',
        "The hooded figure whispers 'entity@alice[you]'",
        id="a_tag_inside_quotes_is_never_hydrated",
    ),
    pytest.param(
        "alice",
        "bob",
        "action",
        "entity@bob[I] see entity@alice",
        "The hooded figure sees entity@alice (Outcome: Succeeded)",
        id="a_bare_tag_is_left_unresolved",
    ),
    pytest.param(
        "charlie",
        "alice",
        "dialogue",
        'entity@alice[I] say "Hello" to entity@bob[Bob] and entity@charlie[Charlie]',
        "Says 'Hello' to Gareth and I",
        id="self_after_and_is_I",
    ),
    pytest.param(
        "alice",
        "alice",
        "thought",
        "entity@alice[I] trust entity@bob[him]",
        "I trust him",
        id="only_an_action_shows_its_outcome",
    ),
]


def _lines(viewer_id: str, reading: str) -> list[dict]:
    out = io.StringIO()
    call_command("render_buffer", viewer_id, "--reading", reading, "--format", "jsonl", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(("viewer", "actor", "kind", "content", "line"), CASES)
def test_a_generated_v2_save_reads_as_omnia_renders_it(cast, viewer, actor, kind, content, line):
    WorldObject.objects.filter(id="charlie").update(
        aliases_json=json.dumps([["bob", "Gareth"], ["alice", ""]])
    )
    remember(
        viewer,
        {"type": kind, "content": content, "actorId": actor, "targetIds": [], "modifiers": []},
        timestamp=at(1),
        outcome=None if kind == "dialogue" else {"isValid": True, "reason": ""},
    )
    [omnia] = _lines(viewer, "omnia")
    assert omnia["line"] == line
    [corrected] = _lines(viewer, "corrected")
    # A line is flawed exactly where the readings part in words (whitespace is no flaw: the
    # corrected reading keeps a tab omnia joins into a space) or omnia's keeps a tag.
    same_words = corrected["line"].split() == line.split()
    assert ("flaws" not in omnia) == (same_words and "entity@" not in line.lower())


@pytest.fixture
def head_tavern(db, activate_save) -> str:
    """omnia's own later-era save, imported and active; its name."""
    imported = import_omnia(FIXTURES / "omnia-head-tavern.sqlite")
    activate_save(imported.save)
    return imported.save


def test_the_leak_report_lists_each_raw_tag_of_omnias_lines(staff_client, head_tavern) -> None:
    body = staff_client.get(f"/api/saves/{head_tavern}/leaks?kind=raw_tag").json()
    assert sorted((f["viewer_id"], f["text"], f["entity_id"]) for f in body["items"]) == [
        ("alice", "entity@the hooded figure[the hooded figure]", ""),
        ("bob", "entity@I[the hooded figure]", ""),
        ("charlie", "entity@Gareth[the hooded figure]", ""),
    ]
    assert body["count"] == 3
    assert {f["source_id"] for f in body["items"]} == {
        "03126717-bf3e-4ad6-89e6-c622a762ae1d",
        "8e84527f-f634-4659-a96d-aa0e804b0b12",
        "9b2d293b-5414-4fbb-bfe7-01bbc45eb51a",
    }


def test_the_prompt_page_shows_omnias_text_with_the_tag_and_the_flaw_marked(
    staff_client, head_tavern
) -> None:
    body = staff_client.get(f"/saves/{head_tavern}/viewers/alice/prompt/").content.decode()
    assert re.findall(
        r'<mark id="leak-at-\d+" class="leak leak-raw_tag"[^>]*>([^<]*)</mark>', body
    ) == ["entity@the hooded figure[the hooded figure]"]
    assert "I wave at <mark" in body
    guard = "97ef4a4a-a324-439f-be1d-a8da93557886"
    api = staff_client.get(f"/api/saves/{head_tavern}/viewers/{guard}/prompt").json()
    assert [(f["kind"], f["text"], f["corrected"], f["line"]) for f in api["flaws"]] == [
        ("unheld_label", "him", "an unfamiliar figure", "I say 'Halt! Who goes there?' to him")
    ]
    page = staff_client.get(f"/saves/{head_tavern}/viewers/{guard}/prompt/").content.decode()
    assert (
        "omnia renders this line wrongly: “I say &#x27;Halt! Who goes there?&#x27; to "
        '<mark class="flaw flaw-unheld_label" title="unheld_label">him</mark>”'
    ) in page


def test_the_buffer_twin_carries_both_readings_and_the_flaws(staff_client, head_tavern) -> None:
    items = staff_client.get(f"/api/saves/{head_tavern}/viewers/charlie/buffer").json()["items"]
    by_id = {i["id"]: i for i in items}
    assert by_id["598951e9-ec2d-4131-999d-100c2c9a6f20"]["line"] == (
        "An unfamiliar figure says 'Has anyone seen a boy with red hair?' to Gareth and I"
    )
    assert by_id["598951e9-ec2d-4131-999d-100c2c9a6f20"]["line_corrected"] == (
        "An unfamiliar figure says 'Has anyone seen a boy with red hair?' to Gareth and me"
    )
    assert by_id["598951e9-ec2d-4131-999d-100c2c9a6f20"]["flaws"] == [
        {"kind": "grammar", "start": 79, "end": 80, "text": "I", "corrected": "me"}
    ]
    # A line both readings agree on carries no flaw.
    assert by_id["ad2c1cd2-2037-44ee-bf05-9f2fb3d91154"]["line"] == "I wonder why Gareth came back"
    assert by_id["ad2c1cd2-2037-44ee-bf05-9f2fb3d91154"]["flaws"] == []
    assert sum(len(i["flaws"]) for i in items) == 2  # the other: the raw tag


def test_the_buffer_panel_shows_omnias_line_marked_beside_the_corrected_one(
    staff_client, cast
) -> None:
    remember(
        "alice",
        {
            "type": "action",
            "content": "entity@bob[I] write <script>alert(1)</script> to entity@alice[her]",
            "actorId": "bob",
            "targetIds": ["alice"],
            "modifiers": [],
        },
        timestamp=at(1),
    )
    body = staff_client.get("/saves/cast/viewers/alice/buffer/").content.decode()
    assert (
        '<button type="button" class="reading-toggle" data-reading-toggle aria-pressed="false"'
        in body
    )
    assert (
        '<span class="line line-omnia" data-reading="omnia">The hooded figure writes '
        "&lt;script&gt;alert(1)&lt;/script&gt; to "
        '<mark class="flaw flaw-grammar" title="grammar; corrected: “me”">my</mark></span>'
        '<span class="line line-corrected" data-reading="corrected">The hooded figure writes '
        "&lt;script&gt;alert(1)&lt;/script&gt; to me</span>"
    ) in body
    assert "<script>alert" not in body


def test_omnias_quiet_flaws_are_counted_per_save_at_each_scan(staff_client, demo) -> None:
    stored.refresh()
    # Each a real bug of omnia's renderer in the demo's v2 lines: "haul", "chalk" (compromise
    # does not conjugate them), "to my" (an object "her" read by herself), "to her" (kept for
    # someone the viewer calls Isolde Varga), "I's coat pocket", "… and I" (three for Tobiah).
    assert dict(LeakScan.objects.filter(flaws__gt=0).values_list("viewer_id", "flaws")) == {
        "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13": 2,
        "npc-maren": 1,
        "npc-oswin": 1,
        "npc-pip": 2,
        "npc-sable": 1,
        "npc-tobiah": 3,
    }
    assert leak_reads.flaw_counts() == leak_reads.FlawCounts(total=10, viewers=6)
    page = staff_client.get("/saves/demo/").content.decode()
    assert (
        '<p class="small muted omnia-flaws">omnia renders 10 places of its own lines wrongly in '
        "the prompts of 6 viewers (person, number, case, a label the viewer does not hold: no "
        "leak, listed on each viewer’s prompt page).</p>"
    ) in page
