"""The leak report's actions and filters through the pages (issue 15 item 6): accept as
expected (editors, a reason required, audited), reopen, add an alias through the alias edit
service; filters by world and state, sort, names first; htmx gets the table, no JS a redirect."""

from __future__ import annotations

import json

from django.contrib.auth.models import Group

from memory import roles
from memory.models import AliasChange, AuditLog, LeakAcceptance

HX = {"HX-Request": "true"}
HALE = {
    "viewer_id": "ida",
    "section": "Recent memories",
    "kind": "unknown_name",
    "text": "Hale",
    "filter_world": "millbrook",
}


def states(client, query: str = "") -> list[tuple[str, str, str, int, str]]:
    items = client.get(f"/saves/millbrook/leaks.json{query}").json()["items"]
    return [(f["viewer_id"], f["kind"], f["text"], f["count"], f["state"]) for f in items]


def test_accept_with_htmx_answers_the_table_and_records_it(editor_client, millbrook) -> None:
    r = editor_client.post(
        "/saves/millbrook/leaks/accept/", {**HALE, "reason": "a famous tanner"}, headers=HX
    )
    body = r.content.decode().strip()
    assert r.status_code == 200 and body.startswith('<section id="leak-table"')
    assert '<h2 id="leak-title">3 findings in millbrook</h2>' in body  # the filter kept
    assert (
        '<span class="badge accepted">accepted</span> <span class="small">a famous tanner' in body
    )
    (done,) = LeakAcceptance.objects.all()
    assert (done.viewer_id, done.kind, done.text, done.accepted_by.username) == (
        "ida",
        "unknown_name",
        "Hale",
        "eddie",
    )
    audit = AuditLog.objects.get(action="leak.accept")
    assert (audit.actor.username, audit.target, json.loads(audit.after_json)) == (
        "eddie",
        "ida [Recent memories] unknown_name 'Hale'",
        {"reason": "a famous tanner"},
    )
    assert states(editor_client, "?world=millbrook&state=accepted") == [
        ("ida", "unknown_name", "Hale", 3, "accepted")
    ]
    assert states(editor_client, "?world=millbrook&state=open&sort=count") == [
        ("ida", "system_id", "the-tannery", 2, "open"),
        ("hale", "system_id", "the-tannery", 1, "open"),
    ]
    # The overview counts open findings only.
    overview = editor_client.get("/saves/millbrook/").content.decode()
    ida = overview.split('<tr data-viewer="ida">')[1].split("</tr>")[0]
    assert "<td>1</td><td>0</td><td>0</td>" in ida


def test_accept_without_js_redirects_back_with_the_filters(editor_client, millbrook) -> None:
    r = editor_client.post("/saves/millbrook/leaks/accept/", {**HALE, "reason": "fine"})
    assert (r.status_code, r.url) == (302, "/saves/millbrook/leaks/?world=millbrook")
    r = editor_client.post("/saves/millbrook/leaks/reopen/", HALE)
    assert (r.status_code, r.url) == (302, "/saves/millbrook/leaks/?world=millbrook")
    assert LeakAcceptance.objects.count() == 0
    assert AuditLog.objects.filter(action="leak.reopen").count() == 1


def test_accept_without_a_reason_is_refused_beside_its_row(editor_client, millbrook) -> None:
    r = editor_client.post("/saves/millbrook/leaks/accept/", {**HALE, "reason": "  "})
    assert r.status_code == 400
    body = r.content.decode()
    assert '<p class="error" role="alert">a reason is required to accept a finding</p>' in body
    assert LeakAcceptance.objects.count() == 0 and not AuditLog.objects.exists()
    r = editor_client.post(
        "/saves/millbrook/leaks/accept/", {**HALE, "text": "Nobody", "reason": "x"}, headers=HX
    )
    assert r.status_code == 200 and LeakAcceptance.objects.count() == 0
    assert "no unknown_name finding &#x27;Nobody&#x27;" in r.content.decode()


def test_readers_cannot_accept_or_add_aliases(client, django_user_model, millbrook) -> None:
    client.force_login(django_user_model.objects.create_user("reader", password="pw"))
    assert client.post("/saves/millbrook/leaks/accept/", {**HALE, "reason": "x"}).status_code == 403
    alias = {"viewer_id": "ida", "target_id": "hale", "label": "Hale Morrow"}
    assert client.post("/saves/millbrook/leaks/alias/", alias).status_code == 403
    page = client.get("/saves/millbrook/leaks/").content.decode()
    assert "Accept as expected" not in page and "Add alias" not in page
    assert client.get("/saves/millbrook/leaks/accept/").status_code == 405
    assert not LeakAcceptance.objects.exists() and not AliasChange.objects.exists()


def test_add_alias_from_the_report_goes_through_the_alias_service(editor_client, millbrook):
    alias = {"viewer_id": "ida", "target_id": "hale", "label": "Hale Morrow"}
    r = editor_client.post(
        "/saves/millbrook/leaks/alias/", {**alias, "filter_viewer": "ida"}, headers=HX
    )
    body = r.content.decode()
    assert r.status_code == 200 and '<h2 id="leak-title">1 finding for Ida</h2>' in body
    assert 'data-kind="unknown_name"' not in body  # she knows the name now
    change = AliasChange.objects.get()
    assert (change.before, change.after, change.source) == (
        "the tanner's widow",
        "Hale Morrow",
        "leak report",
    )
    assert AuditLog.objects.filter(action="alias.set").count() == 1
    # A label the alias service refuses comes back beside the row; nothing written.
    r = editor_client.post(
        "/saves/millbrook/leaks/alias/",
        {"viewer_id": "ida", "target_id": "hale", "label": "the-tannery"},
    )
    assert r.status_code == 400
    assert '<p class="error" role="alert">' in r.content.decode()
    assert AliasChange.objects.count() == 1
    assert (
        editor_client.post(
            "/saves/millbrook/leaks/alias/", {**alias, "viewer_id": "nobody"}
        ).status_code
        == 404
    )


def test_the_report_lists_names_first_with_links(editor_client, millbrook) -> None:
    body = editor_client.get("/saves/millbrook/leaks/?world=millbrook").content.decode()
    row = body.split('data-kind="unknown_name"')[1].split("</tr>")[0]
    assert '<a href="/saves/millbrook/viewers/ida/">Ida</a>' in row
    assert 'Hale Morrow <code class="id-hint">hale</code>' in row
    assert (
        '<a class="to-source" href="/saves/millbrook/viewers/ida/entries/ida-1/">source row</a>'
        in row
    )
    assert (
        '<a class="to-source more" href="/saves/millbrook/viewers/ida/entries/ida-3/">row 3</a>'
        in row
    )
    assert '<td data-label="world" class="world">millbrook</td>' in row
    assert '<td data-label="×" class="count">3</td>' in row
    assert "the tanner&#x27;s widow waves; <mark>Hale</mark> is busy" in row
    prompt = editor_client.get("/saves/millbrook/viewers/ida/prompt/").content.decode()
    anchor = row.split('class="to-prompt" href="/saves/millbrook/viewers/ida/prompt/#')[1].split(
        '"'
    )[0]
    assert f'<mark id="{anchor}"' in prompt
    # the place id is no entity: no alias to give
    tannery = body.split('data-kind="system_id"')[1].split("</tr>")[0]
    assert "Add alias" not in tannery


def test_the_api_accepts_and_reopens_with_the_same_rules(client, django_user_model, millbrook):
    from memory.tokens import issue_token

    editor = django_user_model.objects.create_user("eddie", password="pw")
    editor.groups.add(Group.objects.get(name=roles.EDITORS))
    reader = django_user_model.objects.create_user("reader", password="pw")
    as_editor = {"Authorization": f"Bearer {issue_token(editor, 'ci')[1]}"}
    as_reader = {"Authorization": f"Bearer {issue_token(reader, 'ci')[1]}"}
    key = {k: v for k, v in HALE.items() if not k.startswith("filter_")}

    def post(path: str, body: dict, headers: dict):
        return client.post(path, json.dumps(body), content_type="application/json", headers=headers)

    assert (
        post("/api/saves/millbrook/leaks/accept", {**key, "reason": "x"}, as_reader).status_code
        == 403
    )
    r = post("/api/saves/millbrook/leaks/accept", {**key, "reason": ""}, as_editor)
    assert (r.status_code, r.json()["code"]) == (422, "invalid")
    r = post("/api/saves/millbrook/leaks/accept", {**key, "reason": "famous"}, as_editor)
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in ("viewer_id", "text", "reason", "accepted_by")} == {
        "viewer_id": "ida",
        "text": "Hale",
        "reason": "famous",
        "accepted_by": "eddie",
    }
    assert (
        post("/api/saves/millbrook/leaks/accept", {**key, "reason": "again"}, as_editor).status_code
        == 409
    )
    gone = post(
        "/api/saves/millbrook/leaks/accept", {**key, "text": "Nobody", "reason": "x"}, as_editor
    )
    assert (gone.status_code, gone.json()["field"]) == (404, "text")
    items = client.get(
        "/api/saves/millbrook/leaks?viewer=ida&state=accepted", headers=as_reader
    ).json()["items"]
    assert [(f["text"], f["state"], f["accepted_reason"]) for f in items] == [
        ("Hale", "accepted", "famous")
    ]
    assert post("/api/saves/millbrook/leaks/reopen", key, as_editor).status_code == 204
    assert post("/api/saves/millbrook/leaks/reopen", key, as_editor).status_code == 404
    assert LeakAcceptance.objects.count() == 0


def test_the_report_lists_its_rows_a_page_at_a_time_and_an_action_keeps_the_page(
    editor_client, millbrook, monkeypatch
) -> None:
    """Past LEAK_ROWS_SHOWN rows the table pages (the title counts them all; the exports and
    the API list every one); an action on a later page answers with that page."""
    import re

    from memory.web.views import leaks

    monkeypatch.setattr(leaks, "LEAK_ROWS_SHOWN", 2)
    sort = "?world=millbrook&sort=count"

    def rows(body: str) -> list[tuple[str, str]]:
        return re.findall(r'data-viewer="([^"]+)" data-kind="([^"]+)" data-state="open"', body)

    first = editor_client.get(f"/saves/millbrook/leaks/{sort}").content.decode()
    assert '<h2 id="leak-title">3 findings in millbrook</h2>' in first
    assert rows(first) == [("ida", "unknown_name"), ("ida", "system_id")]
    pager = re.search(r'<p class="small leak-pager">(.*?)</p>', first).group(1)
    assert re.sub(r"<[^>]+>", "", pager) == "Rows 1–2 of 3 · later rows →"
    assert 'href="/saves/millbrook/leaks/?world=millbrook&amp;sort=count&amp;from=2"' in pager
    # The exports are whole: no page in their links.
    assert 'href="/saves/millbrook/leaks/?format=csv&amp;world=millbrook&amp;sort=count"' in first
    second = editor_client.get(f"/saves/millbrook/leaks/{sort}&from=2").content.decode()
    assert rows(second) == [("hale", "system_id")]
    assert '<input type="hidden" name="filter_from" value="2">' in second
    answer = editor_client.post(
        "/saves/millbrook/leaks/accept/",
        {
            "viewer_id": "hale",
            "section": "Recent memories",
            "kind": "system_id",
            "text": "the-tannery",
            "reason": "a sign over the door",
            "filter_world": "millbrook",
            "filter_sort": "count",
            "filter_from": "2",
        },
        headers=HX,
    ).content.decode()
    assert re.findall(r'data-viewer="([^"]+)" data-kind="[^"]+" data-state="accepted"', answer) == [
        "hale"
    ]
    assert "Rows 3–3 of 3 · ← earlier rows" in re.sub(r"<[^>]+>", "", answer)
    # A page past the end shows the last one.
    past = editor_client.get(f"/saves/millbrook/leaks/{sort}&from=99").content.decode()
    assert "Rows 3–3 of 3 · ← earlier rows" in re.sub(r"<[^>]+>", "", past)
    # An offset that is no plain number (a digit int() refuses, among them) is the first page.
    for odd in ("%C2%B2", "x", "-1"):  # ("%C2%B2": "²")
        first = editor_client.get(f"/saves/millbrook/leaks/{sort}&from={odd}")
        assert first.status_code == 200
        assert "Rows 1–2 of 3 · later rows" in re.sub(r"<[^>]+>", "", first.content.decode())
