"""Issue 13 item 10 and issue 15 item 6 through the commands: a world with readable ids (an NPC
`hale` named "Hale Morrow", a place `the-tannery`), one finding per distinct leak with its
count, and findings accepted as expected that `scan_leaks --fail-on-leak` ignores."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from memory import services
from memory.models import AuditLog, LeakAcceptance


def run(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def prompt_text(viewer: str) -> str:
    return run("render_prompt", viewer)[1].removesuffix("\n")


def findings(viewer: str) -> list[tuple]:
    _code, out, _err = run("scan_leaks", "--viewer", viewer, "--format", "json")
    return [
        (
            f["kind"],
            f["text"],
            f["entity_id"],
            f["count"],
            [o["source_id"] for o in f["occurrences"]],
        )
        for f in json.loads(out)
    ]


def test_hales_own_prompt_reports_her_name_nowhere_and_the_tannery_once(millbrook):
    # Her two lines say "Hale" twice; her own true name explains it. The place id is a
    # system id (no name explains "the-tannery"), listed once.
    text = prompt_text("hale")
    assert text.count("Hale") == 3  # "- name: Hale Morrow" and her two lines
    assert findings("hale") == [("system_id", "the-tannery", "the-tannery", 1, ["hale-2"])]


def test_a_viewer_who_knows_her_as_hale_morrow_sees_no_leak(millbrook):
    assert "Hale is busy" in prompt_text("ned")
    assert findings("ned") == []


def test_a_viewer_who_does_not_know_her_name_gets_one_unknown_name_with_a_count(millbrook):
    text = prompt_text("ida")
    _code, out, _err = run("scan_leaks", "--viewer", "ida", "--format", "json")
    hale, tannery = json.loads(out)
    assert (hale["kind"], hale["text"], hale["entity_id"], hale["count"]) == (
        "unknown_name",
        "Hale",
        "hale",
        3,
    )
    assert hale["reason"] == (
        "ida knows hale only as 'the tanner's widow'; 'Hale' is part of its true name 'Hale Morrow'"
    )
    assert [o["source_id"] for o in hale["occurrences"]] == ["ida-1", "ida-2", "ida-3"]
    # every occurrence is kept, at the offsets render_prompt prints
    assert [text[o["start"] : o["end"]] for o in hale["occurrences"]] == ["Hale"] * 3
    assert (tannery["kind"], tannery["text"], tannery["count"]) == ("system_id", "the-tannery", 2)
    assert [text[o["start"] : o["end"]] for o in tannery["occurrences"]] == ["the-tannery"] * 2
    code, out, _err = run("scan_leaks", "--viewer", "ida")
    assert out.splitlines()[0].startswith("ida [Recent memories] unknown_name ")
    assert " 'Hale' x3: " in out.splitlines()[0]


def test_accepting_every_finding_turns_fail_on_leak_to_exit_0_and_says_how_many(millbrook):
    code, out, _err = run("scan_leaks", "--fail-on-leak")
    assert code == 1
    assert out.splitlines()[-1] == "3 finding(s) in 3 viewer prompt(s)"
    services.accept_leak("ida", "Recent memories", "unknown_name", "Hale", "she is famous")
    code, out, _err = run("scan_leaks", "--fail-on-leak")
    assert code == 1  # two still open
    assert out.splitlines()[-1] == "ignored 1 accepted finding(s)"
    assert "'Hale' x3: ida knows hale" in out and "[accepted: she is famous]" in out
    for viewer in ("hale", "ida"):
        services.accept_leak(viewer, "Recent memories", "system_id", "the-tannery", "sign text")
    code, out, err = run("scan_leaks", "--fail-on-leak")
    assert code == 0
    assert out.splitlines()[-2:] == [
        "3 finding(s) in 3 viewer prompt(s)",
        "ignored 3 accepted finding(s)",
    ]
    code, out, err = run("scan_leaks", "--fail-on-leak", "--format", "json")
    assert (code, err) == (0, "ignored 3 accepted finding(s)\n")
    assert [(f["viewer_id"], f["state"], f["accepted_reason"]) for f in json.loads(out)] == [
        ("hale", "accepted", "sign text"),
        ("ida", "accepted", "she is famous"),
        ("ida", "accepted", "sign text"),
    ]
    code, out, _err = run("scan_leaks", "--format", "csv")
    assert [line.rsplit(",", 2)[1:] for line in out.splitlines()[1:]] == [
        ["accepted", "sign text"],
        ["accepted", "she is famous"],
        ["accepted", "sign text"],
    ]
    assert list(AuditLog.objects.filter(action="leak.accept").values_list("target", flat=True)) == [
        "ida [Recent memories] system_id 'the-tannery'",
        "hale [Recent memories] system_id 'the-tannery'",
        "ida [Recent memories] unknown_name 'Hale'",
    ]


def test_an_acceptance_survives_rescans_while_the_finding_is_unchanged(millbrook):
    from memory.engine.leaks import stored
    from memory.engine.upkeep import rebuild_all

    services.accept_leak("ida", "Recent memories", "unknown_name", "Hale", "she is famous")
    rebuild_all()
    stored.refresh()
    code, out, _err = run("scan_leaks", "--viewer", "ida", "--format", "json")
    states = {f["text"]: f["state"] for f in json.loads(out)}
    assert states == {"Hale": "accepted", "the-tannery": "open"}
    # Ida learns the name: the finding is gone; the acceptance stays, harmless.
    services.set_alias("ida", "hale", "Hale Morrow", source="test")
    assert [f[1] for f in findings("ida")] == ["the-tannery"]
    assert LeakAcceptance.objects.count() == 1


def test_accepting_needs_a_reason_and_a_current_finding(millbrook):
    from memory.engine.errors import Conflict, InvalidInput, NotFound

    with pytest.raises(InvalidInput, match="a reason is required"):
        services.accept_leak("ida", "Recent memories", "unknown_name", "Hale", "   ")
    with pytest.raises(NotFound):
        services.accept_leak("ned", "Recent memories", "unknown_name", "Hale", "why not")
    services.accept_leak("ida", "Recent memories", "unknown_name", "Hale", "famous")
    with pytest.raises(Conflict):
        services.accept_leak("ida", "Recent memories", "unknown_name", "Hale", "again")
    assert LeakAcceptance.objects.count() == 1
    assert AuditLog.objects.filter(action="leak.accept").count() == 1
    services.reopen_leak("ida", "Recent memories", "unknown_name", "Hale")
    assert LeakAcceptance.objects.count() == 0
    assert AuditLog.objects.filter(action="leak.reopen").count() == 1


def test_every_line_of_the_long_term_and_buffer_sections_names_its_row(activate_save):
    from memory.engine.knowledge import get_viewer
    from memory.engine.prompt import prompt_context
    from memory.models import BufferEntry
    from memory.selectors.faces import long_term_entry
    from memory.worlds.demo import load_demo

    activate_save(load_demo().save)
    prompt = prompt_context(get_viewer("npc-tobiah"))
    text, at = prompt.text, 0
    checked = {"Long-term memory": 0, "Recent memories": 0}
    for section in prompt.sections:
        body_at = at + len(f"## {section.name}\n")
        for start, end, row_id in section.sources:
            line = section.text[start:end]
            assert "\n" not in line and text[body_at + start : body_at + end] == line
            assert prompt.source_at(body_at + start) == row_id
            if section.name == "Recent memories":
                assert BufferEntry.objects.filter(id=row_id, owner_id="npc-tobiah").exists()
            else:
                assert long_term_entry("npc-tobiah", row_id) is not None
            checked[section.name] += 1
        at = body_at + len(section.text) + 2
    assert all(checked.values()), checked
    assert prompt.source_at(0) is None  # the clock line comes from no row


def test_pages_give_each_reason_by_name_where_tools_keep_the_ids(millbrook, client, admin_user):
    import html
    import re

    client.force_login(admin_user)
    by_name = (
        "Ida knows Hale Morrow only as 'the tanner's widow'; 'Hale' is part of its true name "
        "'Hale Morrow'"
    )
    page = client.get("/saves/millbrook/leaks/?viewer=ida").content.decode()
    why = re.findall(r'<span class="why small muted">([^<]*)</span>', page)
    assert [html.unescape(w) for w in why] == [by_name, "system id of object 'the-tannery'"]
    prompt = html.unescape(client.get("/saves/millbrook/viewers/ida/prompt/").content.decode())
    assert f'(entity Hale Morrow <code class="id-hint">hale</code>): {by_name} ' in prompt
    # The exports and the API say it with ids, as scan_leaks does.
    export = client.get("/saves/millbrook/leaks/?viewer=ida&format=json").json()
    api = client.get("/api/saves/millbrook/leaks?viewer=ida").json()
    for body in (export, api):
        assert body["items"][0]["reason"].startswith("ida knows hale only as ")


def test_reason_by_name_swaps_only_the_ids_it_wrote():
    from memory.engine.leaks.scanner import reason_by_name

    names = {"ida": "Ida", "hale": "Hale Morrow"}.get
    assert (
        reason_by_name("ida knows hale only as 'hale of ida'", "ida", "hale", None, names)
        == "Ida knows Hale Morrow only as 'hale of ida'"
    )
    assert (
        reason_by_name(
            "ida has no alias for hale; 'Hale' is its true name", "ida", "hale", None, names
        )
        == "Ida has no alias for Hale Morrow; 'Hale' is its true name"
    )
    assert (
        reason_by_name(
            "private attribute 'scar' of hale; ida has no access", "ida", "hale", "scar", names
        )
        == "private attribute 'scar' of Hale Morrow; Ida has no access"
    )
    system = "system id of object 'hale'"
    assert reason_by_name(system, "ida", "hale", None, names) == system
