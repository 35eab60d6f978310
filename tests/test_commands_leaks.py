"""render_prompt, decode_intent and scan_leaks on the named cast: exact output, exit codes."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import BufferEntry

ALICE_PROMPT = """\
## Current moment
It is 12:30 PM on Monday, July 6, 2026.
You are in a place you cannot name.

## The world as you perceive it
The world: The Rusty Flagon.
You:
- appearance: a young woman in a dusty green travelling cloak
- name: Alice
- purpose: searching for her missing brother
Here with you:
- the hooded figure
  - appearance: a tall man hidden under a dark hooded cloak
- the bartender
  - occupation: bartender

## Long-term memory
(no long-term memory)

## Recent memories
[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"

## Sessions
(no sessions)"""

LINE_HEAD = '[12:00:00 PM] the hooded figure spoke to the bartender: "'
GARETH = {
    "world_id": "tavern",
    "viewer_id": "alice",
    "section": "Recent memories",
    "kind": "unknown_name",
    "start": 539,
    "end": 545,
    "text": "Gareth",
    "entity_id": "bob",
    "attribute_name": None,
    "reason": "alice knows bob only as 'the hooded figure'",
    "likely_description": False,
    "count": 1,
    "source_id": "m1",
    "occurrences": [{"start": 539, "end": 545, "source_id": "m1"}],
    "context_before": LINE_HEAD,
    "context_after": ' greets Charlie"',
    "state": "open",
    "accepted_reason": None,
}
CHARLIE = {
    **GARETH,
    "start": 553,
    "end": 560,
    "text": "Charlie",
    "entity_id": "charlie",
    "reason": "alice knows charlie only as 'the bartender'",
    "occurrences": [{"start": 553, "end": 560, "source_id": "m1"}],
    # 60 characters of the line either side, cut with an ellipsis
    "context_before": "…" + (LINE_HEAD + "Gareth greets ")[-60:],
    "context_after": '"',
}


@pytest.fixture
def tavern(cast):
    # bob greets charlie by name and alice overhears it: "Gareth" is bob's secret true name.
    BufferEntry.objects.create(
        id="m1",
        owner_id="alice",
        timestamp="2026-07-06T12:00:00.000Z",
        intent_json=json.dumps(
            {
                "type": "dialogue",
                "actorId": "bob",
                "targetIds": ["charlie"],
                "description": "Gareth greets Charlie",
            }
        ),
        created_at=1,
    )
    return cast


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def exit_code(*args: str) -> int:
    try:
        run(*args)
    except SystemExit as exc:
        return int(exc.code)
    except CommandError as exc:
        return exc.returncode
    return 0


@pytest.mark.django_db
def test_render_prompt_prints_the_text(tavern):
    assert run("render_prompt", "alice") == ALICE_PROMPT + "\n"
    assert ALICE_PROMPT[539:545] == "Gareth" and ALICE_PROMPT[553:560] == "Charlie"


@pytest.mark.django_db
def test_render_prompt_json_has_sections_and_text(tavern):
    answer = json.loads(run("render_prompt", "alice", "--json"))
    assert answer == {
        "sections": [
            {
                "name": "Current moment",
                "text": "It is 12:30 PM on Monday, July 6, 2026.\nYou are in a place you cannot name.",
            },
            {
                "name": "The world as you perceive it",
                "text": "The world: The Rusty Flagon.\nYou:\n"
                "- appearance: a young woman in a dusty green travelling cloak\n- name: Alice\n"
                "- purpose: searching for her missing brother\nHere with you:\n- the hooded figure\n"
                "  - appearance: a tall man hidden under a dark hooded cloak\n- the bartender\n"
                "  - occupation: bartender",
            },
            {"name": "Long-term memory", "text": "(no long-term memory)"},
            {
                "name": "Recent memories",
                "text": '[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"',
            },
            {"name": "Sessions", "text": "(no sessions)"},
        ],
        "text": ALICE_PROMPT,
    }


@pytest.mark.django_db
def test_render_prompt_charlie_sees_bobs_secret_he_may_see(tavern):
    text = run("render_prompt", "charlie")
    start = text.index("## The world as you perceive it")
    assert text[start : text.index("\n\n## Long-term memory")] == (
        "## The world as you perceive it\n"
        "The world: The Rusty Flagon.\n"
        "You:\n"
        "- debt: owes 40 silver to the thieves' guild\n"
        "- name: Charlie\n"
        "- occupation: bartender\n"
        "Here with you:\n"
        "- an unfamiliar figure\n"
        "  - appearance: a young woman in a dusty green travelling cloak\n"
        "- Gareth\n"
        "  - appearance: a tall man hidden under a dark hooded cloak\n"
        "  - weapon: a dagger strapped to his ankle"
    )  # bob's name reaches charlie through the alias map, never as an attribute line


@pytest.mark.django_db
def test_decode_intent_prints_the_resolution(tavern):
    answer = json.loads(run("decode_intent", "alice", "I follow the hooded figure past the guard"))
    assert answer == {
        "actor_id": "alice",
        "target_ids": ["bob"],
        "mentions": [
            {"start": 0, "end": 1, "text": "I", "entity_id": "alice"},
            {"start": 9, "end": 26, "text": "the hooded figure", "entity_id": "bob"},
        ],
        "ambiguous": [],
        "unresolved": ["the guard"],
    }


@pytest.mark.django_db
def test_scan_leaks_json_lists_every_finding_with_viewer_and_section(tavern):
    assert json.loads(run("scan_leaks", "--format", "json")) == [GARETH, CHARLIE]
    assert json.loads(run("scan_leaks", "--format", "json", "--viewer", "bob")) == []


@pytest.mark.django_db
def test_scan_leaks_csv(tavern):
    assert run("scan_leaks", "--format", "csv") == (
        "world_id,viewer_id,section,kind,text,count,start,end,entity_id,reason,source_id,context,"
        "state,accepted_reason\n"
        "tavern,alice,Recent memories,unknown_name,Gareth,1,539,545,bob,alice knows bob only as "
        "'the hooded figure',m1,\"[12:00:00 PM] the hooded figure spoke to the bartender: "
        '""Gareth greets Charlie""",open,\n'
        "tavern,alice,Recent memories,unknown_name,Charlie,1,553,560,charlie,alice knows charlie "
        "only as 'the bartender',m1,\"…M] the hooded figure spoke to the bartender: "
        '""Gareth greets Charlie""",open,\n'
    )


@pytest.mark.django_db
def test_scan_leaks_text(tavern):
    assert run("scan_leaks") == (
        "alice [Recent memories] unknown_name 539-545 'Gareth': alice knows bob only as 'the hooded figure'\n"
        "alice [Recent memories] unknown_name 553-560 'Charlie': alice knows charlie only as 'the bartender'\n"
        "2 finding(s) in 3 viewer prompt(s)\n"
    )


@pytest.mark.django_db
def test_scan_leaks_exit_codes(tavern):
    assert exit_code("scan_leaks") == 0
    assert exit_code("scan_leaks", "--fail-on-leak") == 1
    assert exit_code("scan_leaks", "--fail-on-leak", "--viewer", "charlie") == 0
    assert exit_code("scan_leaks", "--viewer", "nobody") == 2
    assert exit_code("scan_leaks", "--world", "nowhere") == 2
    assert exit_code("render_prompt", "nobody") == 2
    assert exit_code("decode_intent", "nobody", "I wave") == 2


@pytest.mark.django_db
def test_unknown_ids_are_one_line(tavern):
    with pytest.raises(CommandError, match=r"^no entity with id 'nobody'$"):
        run("render_prompt", "nobody")
    with pytest.raises(CommandError, match=r"^no world with id 'nowhere'$"):
        run("scan_leaks", "--world", "nowhere")


@pytest.mark.django_db
def test_scan_leaks_stores_what_it_reports_and_fresh_stores_nothing(tavern):
    from memory.models import LeakFinding, LeakScan

    assert json.loads(run("scan_leaks", "--format", "json", "--fresh")) == [GARETH, CHARLIE]
    assert (LeakScan.objects.count(), LeakFinding.objects.count()) == (0, 0)
    assert json.loads(run("scan_leaks", "--format", "json")) == [GARETH, CHARLIE]
    assert LeakScan.objects.count() == 3
    assert sorted(LeakFinding.objects.values_list("viewer_id", "text")) == [
        ("alice", "Charlie"),
        ("alice", "Gareth"),
    ]
    # a stored finding is what the next run reports, until the viewer's inputs move
    LeakFinding.objects.filter(text="Charlie").update(reason="stored")
    assert json.loads(run("scan_leaks", "--format", "json"))[1]["reason"] == "stored"
    assert json.loads(run("scan_leaks", "--format", "json", "--fresh")) == [GARETH, CHARLIE]
