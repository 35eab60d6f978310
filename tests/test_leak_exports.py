"""The leak report as exports: CSV never hands a spreadsheet a formula (LLM-written text is
attacker-steered), and an unknown viewer is a 404 in every format."""

from __future__ import annotations

import pytest

from memory.engine.spreadsheet import safe_row


def test_every_formula_leader_is_neutralised_and_nothing_else_changes():
    assert safe_row(["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "a=b", "", None, 7]) == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "a=b",
        "",
        None,
        7,
    ]


@pytest.mark.django_db
def test_the_leak_csv_export_neutralises_hostile_cells(
    client, django_user_model, monkeypatch, cast
):
    from memory.selectors import leaks

    hostile = {
        "viewer_id": "npc-1",
        "section": "Recent memories",
        "kind": "private_attribute",
        "start": 3,
        "end": 9,
        "text": '=HYPERLINK("http://x")',
        "entity_id": "@bob",
        "reason": "-cmd",
    }
    monkeypatch.setattr(leaks, "leak_findings", lambda **_: [hostile])
    client.force_login(django_user_model.objects.create_user("qa", password="pw"))
    response = client.get("/saves/cast/leaks/?format=csv")
    assert response.status_code == 200
    assert response.content.decode() == (
        "world_id,viewer_id,section,kind,text,count,start,end,entity_id,reason,source_id,"
        "context,state,accepted_reason\r\n"
        ',npc-1,Recent memories,private_attribute,"\'=HYPERLINK(""http://x"")",,3,9,\'@bob,'
        '\'-cmd,,"\'=HYPERLINK(""http://x"")",,\r\n'
    )


@pytest.mark.django_db
def test_the_leak_report_of_an_unknown_viewer_is_a_404_in_each_format(
    cast, client, django_user_model
):
    client.force_login(django_user_model.objects.create_user("qa", password="pw"))
    assert client.get("/saves/cast/leaks/?viewer=nobody").status_code == 404
    assert client.get("/saves/cast/leaks.csv?viewer=nobody").status_code == 404
    answer = client.get("/saves/cast/leaks/?viewer=nobody&format=json")
    assert (answer.status_code, answer.json()) == (
        404,
        {"detail": "no entity with id 'nobody'", "code": "not_found", "field": "viewer"},
    )
