"""Leak triage (issue 28 item 1): allow rules ("this word is fine for this id") that every scan
applies, bulk accept and reopen across saves, and readable ids that are ordinary words labelled
"likely a description" — held against the lighthouse's labelled leak set (recall 100 %)."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import call_command

from memory import services
from memory.active_save import use
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.leaks import stored
from memory.engine.leaks.scanner import build_leak_index, scan_text
from memory.engine.leaks.world_scan import leak_world
from memory.engine.prompt import prompt_context
from memory.engine.saves import get_save
from memory.models import AuditLog, LeakAcceptance, LeakAllowRule, LeakFinding
from memory.worlds.live import Follower
from memory.worlds.scenario import load_world
from memory.worlds.standin import StandIn
from tests.helpers import LIGHTHOUSE, LIGHTHOUSE_LABELLED, LIGHTHOUSE_LINES, MILLBROOK


def stored_rows() -> list[tuple]:
    """The active save's stored findings: (viewer, kind, text, count, likely description)."""
    return list(
        LeakFinding.objects.order_by("viewer_id", "ordinal").values_list(
            "viewer_id", "kind", "text", "count", "likely_description"
        )
    )


def scanned(viewer: str | None = None) -> list[tuple[str, str, str]]:
    """What `scan_leaks` reports now (a fresh scan, nothing stored read)."""
    out = io.StringIO()
    from memory.active_save import current_save

    args = ["scan_leaks", "--save", current_save().name, "--format", "json"]
    args += ["--viewer", viewer] if viewer else []
    call_command(*args, stdout=out, stderr=io.StringIO())  # no --fail-on-leak: exits 0
    return [(f["viewer_id"], f["kind"], f["text"]) for f in json.loads(out.getvalue())]


def rescan_all() -> None:
    from memory.models import LeakScan

    LeakScan.objects.mark_stale()
    stored.refresh()


MILLBROOK_FINDINGS = [
    ("hale", "system_id", "the-tannery", 1, False),
    ("ida", "unknown_name", "Hale", 3, False),
    ("ida", "system_id", "the-tannery", 2, False),
]


# --- allow rules --------------------------------------------------------------------------------


def test_an_allow_rule_removes_the_findings_it_silences_and_is_audited(millbrook, editor):
    stored.refresh()
    assert stored_rows() == MILLBROOK_FINDINGS
    rule, removed = services.allow_word(
        " The-Tannery ", "the-tannery", "the sign says so", save_name="millbrook", user=editor
    )
    assert removed == 2
    assert list(
        LeakAllowRule.objects.values_list(
            "word", "entity_id", "save_name", "viewer_id", "reason", "created_by__username"
        )
    ) == [("the-tannery", "the-tannery", "millbrook", "", "the sign says so", "eddie")]
    assert stored_rows() == [MILLBROOK_FINDINGS[1]]
    audit = AuditLog.objects.get(action="leak.allow")
    assert (audit.target, audit.actor, json.loads(audit.after_json)) == (
        "'the-tannery' for the-tannery (save millbrook)",
        editor,
        {"rule": rule.pk, "reason": "the sign says so", "findings_removed": 2},
    )
    # What was left in the store is what a fresh scan finds: verify sees no drift.
    assert stored.verify().drift == []


def test_revoking_a_rule_brings_its_findings_back_open_and_is_audited(millbrook, editor):
    stored.refresh()
    rule, _ = services.allow_word("hale", "hale", "famous", save_name="millbrook", viewer_id="ida")
    assert stored_rows() == [MILLBROOK_FINDINGS[0], MILLBROOK_FINDINGS[2]]
    services.revoke_allow_rule(rule.pk, user=editor)
    assert stored_rows() == MILLBROOK_FINDINGS
    rule.refresh_from_db()
    assert (rule.revoked_by, rule.revoked_at is not None) == (editor, True)
    assert list(AuditLog.objects.order_by("id").values_list("action", "target")) == [
        ("leak.allow", "'hale' for hale (viewer ida in millbrook)"),
        ("leak.revoke", "'hale' for hale (viewer ida in millbrook)"),
    ]
    with pytest.raises(Conflict):
        services.revoke_allow_rule(rule.pk, user=editor)
    # Revoked, the same rule can be made again.
    again, removed = services.allow_word(
        "HALE", "hale", "x", save_name="millbrook", viewer_id="ida"
    )
    assert (again.pk != rule.pk, removed) == (True, 1)


@pytest.mark.parametrize(
    ("args", "error", "field"),
    [
        (("", "hale", "r"), InvalidInput, "word"),
        (("hale", "", "r"), InvalidInput, "entity_id"),
        (("hale", "hale", "  "), InvalidInput, "reason"),
        (("hale", "hale", "r" * 2001), InvalidInput, "reason"),
        (("hale", "nobody", "r", "millbrook"), NotFound, "entity_id"),
        (("hale", "hale", "r", "nosuchsave"), NotFound, "save"),
        (("hale", "hale", "r", "", "ida"), InvalidInput, "save"),
        (("hale", "hale", "r", "millbrook", "nobody"), NotFound, "viewer_id"),
    ],
)
def test_a_bad_rule_is_refused_by_field_and_writes_nothing(millbrook, args, error, field):
    stored.refresh()
    word, entity, reason, *scope = args
    save_name, viewer = (scope + ["", ""])[:2]
    with pytest.raises(error) as refused:
        services.allow_word(word, entity, reason, save_name=save_name, viewer_id=viewer)
    assert refused.value.field == field
    assert (LeakAllowRule.objects.count(), AuditLog.objects.count()) == (0, 0)
    assert stored_rows() == MILLBROOK_FINDINGS


def test_the_same_rule_twice_is_a_conflict(millbrook):
    services.allow_word("hale", "hale", "r")
    with pytest.raises(Conflict):
        services.allow_word("Hale", "hale", "again")
    assert LeakAllowRule.objects.count() == 1


def test_an_allowed_word_is_never_reported_again_across_rescans_imports_and_replaces(
    millbrook, editor
):
    stored.refresh()
    services.allow_word("the-tannery", "the-tannery", "a sign", user=editor)  # every save
    services.allow_word("hale", "hale", "famous", save_name="millbrook", viewer_id="ida")
    assert scanned() == []  # the command scans afresh: nothing to show
    rescan_all()
    assert stored_rows() == []
    assert scanned() == []
    call_command("rebuild_projections", stdout=io.StringIO())
    assert stored_rows() == []
    call_command("rebuild_projections", "--verify", stdout=io.StringIO())  # exit 0: no drift
    # Another import of the town, a save of its own: the every-save rule holds there, the
    # rule for ida in millbrook does not.
    other = load_world(copy.deepcopy(MILLBROOK), as_name="millbrook-2").save
    with use(get_save(other)):
        stored.refresh()
        assert stored_rows() == [("ida", "unknown_name", "Hale", 3, False)]
    # The town replaced by a new file under its name: a new save row, both rules hold.
    changed = copy.deepcopy(MILLBROOK)
    changed["description"] = "A river town, again."
    report = load_world(changed, as_name="millbrook", replace=True)
    assert report.replaced
    with use(get_save("millbrook")):
        stored.refresh()
        assert stored_rows() == []
        assert scanned() == []


def test_an_allowed_word_stays_silent_while_the_live_follower_writes(db, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=2, delete_every=0, alias_every=0)
    try:
        game.run(20, 0)
        follower = Follower(tmp_path / "game.sqlite")
        follower.tick()
        # Mara hears Tobin's name; so does Ilse. The rule is for Mara alone.
        services.allow_word(
            "Tobin Reed", "tobin", "she was told", save_name="game", viewer_id="mara"
        )
        game.plant_leak()
        follower.tick()
        with use(get_save("game")):
            assert [(v, k, t) for v, k, t, _c, _d in stored_rows()] == [
                ("ilse", "unknown_name", "Tobin Reed")
            ]
            assert stored.verify().drift == []
    finally:
        game.close()


# --- bulk accept and reopen ---------------------------------------------------------------------


def test_bulk_accept_and_reopen_across_two_saves_with_one_reason(lighthouse, millbrook, editor):
    keys = [
        ("lighthouse", "ada", "Recent memories", "system_id", "keeper"),
        ("lighthouse", "bo", "Recent memories", "system_id", "miller"),
        ("millbrook", "ida", "Recent memories", "unknown_name", "Hale"),
    ]
    with use(get_save("millbrook")):
        stored.refresh()
    done = services.accept_leaks(keys, "known to the town", user=editor)
    assert (done.done, done.skipped) == (keys, [])
    every = LeakAcceptance.every_save.order_by("game_save__name", "viewer_id")
    assert list(
        every.values_list("game_save__name", "viewer_id", "text", "reason", "accepted_by__username")
    ) == [
        ("lighthouse", "ada", "keeper", "known to the town", "eddie"),
        ("lighthouse", "bo", "miller", "known to the town", "eddie"),
        ("millbrook", "ida", "Hale", "known to the town", "eddie"),
    ]
    again = services.accept_leaks(keys[:1], "twice", user=editor)
    assert (again.done, again.skipped) == ([], keys[:1])
    back = services.reopen_leaks([keys[0], keys[2]], user=editor)
    assert (back.done, back.skipped) == ([keys[0], keys[2]], [])
    assert list(every.values_list("game_save__name", "viewer_id", "text")) == [
        ("lighthouse", "bo", "miller")
    ]
    assert services.reopen_leaks(keys[:1], user=editor).skipped == keys[:1]
    assert AuditLog.objects.filter(action="leak.accept").count() == 3
    assert AuditLog.objects.filter(action="leak.reopen").count() == 2


def test_bulk_accept_is_all_or_nothing(lighthouse, editor):
    keys = [
        ("lighthouse", "ada", "Recent memories", "system_id", "keeper"),
        ("lighthouse", "ada", "Recent memories", "system_id", "no such word"),
    ]
    with pytest.raises(NotFound):
        services.accept_leaks(keys, "r", user=editor)
    with pytest.raises(NotFound):
        services.accept_leaks([("nosave", "ada", "Recent memories", "system_id", "x")], "r")
    with pytest.raises(InvalidInput):
        services.accept_leaks(keys[:1], "  ")
    assert (LeakAcceptance.every_save.count(), AuditLog.objects.count()) == (0, 0)


# --- ordinary words: likely a description ---------------------------------------------------------


def test_every_labelled_leak_is_still_reported_and_descriptions_are_labelled(lighthouse):
    """Recall on the labelled set stays 100 %: every labelled id occurrence is a finding;
    those labelled descriptions (and only those) carry the label."""
    index = build_leak_index(leak_world("lighthouse"))
    for viewer in LIGHTHOUSE_LINES:
        text = prompt_context(get_viewer(viewer)).text
        found = {
            (f.text.lower(), text.count("\n", 0, f.start)): f
            for f in scan_text(index, viewer, text)
        }
        lines = text.splitlines()
        for owner, number, written, description in LIGHTHOUSE_LABELLED:
            if owner != viewer:
                continue
            line_at = next(
                i
                for i, line in enumerate(lines)
                if line.endswith(LIGHTHOUSE_LINES[owner][number - 1])
            )
            finding = found.pop((written, line_at))
            assert (finding.kind, finding.entity_id) == ("system_id", written)
            assert finding.likely_description is description, (owner, number)
        assert found == {}  # nothing reported the labels do not list
    recall = sum(1 for *_x, d in LIGHTHOUSE_LABELLED if not d)
    assert recall == 4
    # Stored, grouped: ada's findings are all descriptions, bo's none.
    assert stored_rows() == [
        ("ada", "system_id", "keeper", 2, True),
        ("ada", "system_id", "castaway", 1, True),
        ("ada", "system_id", "miller", 1, True),
        ("bo", "system_id", "Keeper", 1, False),
        ("bo", "system_id", "keeper", 1, False),
        ("bo", "system_id", "castaway", 1, False),
        ("bo", "system_id", "miller", 1, False),
    ]
    assert LIGHTHOUSE["id"] == "lighthouse"


def test_a_group_with_one_use_as_a_name_is_no_description(lighthouse):
    from memory.engine.leaks.scanner import reads_as_description

    line = "the keeper said keeper"
    assert reads_as_description(line, 4, 10, "keeper") is True
    assert reads_as_description(line, 16, 22, "keeper") is False
    assert reads_as_description("The Keeper", 4, 10, "keeper") is False  # capitalised: a name
    assert reads_as_description("an old miller", 7, 13, "miller") is True
    assert reads_as_description("an Old miller", 7, 13, "miller") is False
    assert reads_as_description("the npc-sable", 4, 13, "npc-sable") is False  # not a word
