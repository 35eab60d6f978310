from __future__ import annotations

import json
import re

import pytest

from memory.engine.write_door import remember
from memory.models import AliasChange, AuditLog, WorldObject
from tests.helpers import CHEST_LINE


def v1(
    description: str, actor: str, targets: list[str] | None = None, type_: str = "action"
) -> dict:
    return {
        "type": type_,
        "originalText": description,
        "description": description,
        "actorId": actor,
        "targetIds": targets or [],
    }


PAGES = [
    "/",
    "/saves/cast/",
    "/saves/cast/viewers/alice/",
    "/saves/cast/viewers/alice/aliases/",
    "/saves/cast/viewers/alice/buffer/",
    "/saves/cast/viewers/alice/sessions/",
    "/saves/cast/viewers/alice/faces/",
]


@pytest.mark.parametrize("url", PAGES)
def test_pages_require_login(client, cast, url) -> None:
    r = client.get(url)
    assert r.status_code == 302
    assert r.url.startswith("/accounts/login/")


def test_login_page_renders(client) -> None:
    r = client.get("/accounts/login/")
    assert r.status_code == 200
    assert 'name="username"' in r.content.decode()


@pytest.mark.parametrize("url", PAGES)
def test_every_page_renders_without_js(staff_client, chest, url) -> None:
    r = staff_client.get(url)
    body = r.content.decode()
    assert r.status_code == 200
    assert body.startswith("<!doctype html>")
    assert '<link rel="alternate" type="application/json"' in body
    assert "Content-Security-Policy" in r.headers


STRICT_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "font-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def csp_directives(header: str) -> dict[str, str]:
    # Directive order carries no meaning in CSP (and django-csp does not keep one).
    return dict(part.strip().split(" ", 1) for part in header.split(";"))


@pytest.mark.parametrize(
    "url", ["/accounts/login/", "/saves/cast/viewers/alice/", "/api/saves/cast/entities"]
)
def test_csp_allows_no_inline_script_and_no_external_origin(staff_client, chest, url) -> None:
    r = staff_client.get(url)
    assert r.status_code == 200
    assert csp_directives(r["Content-Security-Policy"]) == STRICT_CSP


def test_csp_leaves_the_api_docs_page_its_own_bundle(staff_client) -> None:
    r = staff_client.get("/api/docs")
    assert r.status_code == 200
    assert "Content-Security-Policy" not in r.headers


def test_viewer_page_shows_rendered_line_and_all_panels(staff_client, chest) -> None:
    body = staff_client.get("/saves/cast/viewers/alice/").content.decode()
    assert CHEST_LINE in body
    for panel in ("aliases-panel", "buffer-panel", "sessions-panel", "faces-panel"):
        assert f'id="{panel}"' in body
    assert (
        '<link rel="alternate" type="application/json" href="/api/saves/cast/viewers/alice/buffer">'
        in body
    )


@pytest.mark.parametrize(
    ("url", "dom_id"),
    [
        ("/saves/cast/viewers/alice/", "viewer-panels"),
        ("/saves/cast/viewers/alice/aliases/", "aliases-panel"),
        ("/saves/cast/viewers/alice/buffer/", "buffer-panel"),
        ("/saves/cast/viewers/alice/sessions/", "sessions-panel"),
        ("/saves/cast/viewers/alice/faces/", "faces-panel"),
        ("/saves/cast/", "viewer-list"),
    ],
)
def test_htmx_request_returns_only_the_fragment(staff_client, chest, url, dom_id) -> None:
    r = staff_client.get(url, headers={"HX-Request": "true"})
    body = r.content.decode().strip()
    assert r.status_code == 200
    assert "<html" not in body and "<!doctype" not in body
    if dom_id == "viewer-panels":
        # A swap of the whole viewer carries the document's new title first (htmx applies it).
        title = "<title>Alice — Omnia Memory Inspector</title>"  # names first
        assert body.startswith(title)
        body = body[len(title) :].strip()
    assert (
        body.split(">", 1)[0].endswith(f'id="{dom_id}"')
        or f'id="{dom_id}"' in body.split(">", 1)[0]
    )
    assert "HX-Request" in r.headers["Vary"]


def test_history_restore_request_gets_the_full_page(staff_client, chest) -> None:
    r = staff_client.get(
        "/saves/cast/viewers/alice/",
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    assert r.content.decode().startswith("<!doctype html>")


def test_buffer_fragment_contains_the_seed_line(staff_client, chest) -> None:
    body = staff_client.get(
        "/saves/cast/viewers/alice/buffer/", headers={"HX-Request": "true"}
    ).content.decode()
    assert f'<span class="line">{CHEST_LINE}</span>' in body
    assert 'class="qa-ids"' not in body  # ids are shown only with the QA toggle


def test_buffer_qa_toggle_shows_ids_and_raw_intent(staff_client, chest) -> None:
    body = staff_client.get("/saves/cast/viewers/alice/buffer/?qa=1").content.decode()
    assert chest.id in body
    # Each id beside the name QA knows it by (issue 28: "actor 5b0e6c1a-…" told nobody who).
    assert 'actor Gareth <code class="id-hint">bob</code> · targets none' in body
    assert "&quot;description&quot;:&quot;opened the wooden chest&quot;" in body


def test_buffer_filters_by_type_and_text(staff_client, cast, chest) -> None:
    remember(
        "alice",
        v1("Hello there", "charlie", ["alice"], type_="dialogue"),
        timestamp="2026-07-06T12:04:00.000Z",
    )
    body = staff_client.get("/saves/cast/viewers/alice/buffer/?type=dialogue").content.decode()
    assert "the bartender" in body and CHEST_LINE not in body
    body = staff_client.get("/saves/cast/viewers/alice/buffer/?q=wooden").content.decode()
    assert CHEST_LINE in body and "Hello there" not in body


def test_buffer_pages_by_cursor(staff_client, cast, settings) -> None:
    settings.OMNIA_BUFFER_PAGE_SIZE = 2
    for minute in range(5):
        remember(
            "alice", v1(f"waved {minute}", "bob"), timestamp=f"2026-07-06T12:0{minute}:00.000Z"
        )
    body = staff_client.get("/saves/cast/viewers/alice/buffer/").content.decode()
    assert "waved 4" in body and "waved 3" in body and "waved 2" not in body
    older = body.split('rel="prev" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    body = staff_client.get(older).content.decode()
    assert "waved 2" in body and "waved 1" in body and "waved 4" not in body
    assert 'rel="next"' in body


def test_buffer_bad_cursor_is_shown_not_a_500(staff_client, chest) -> None:
    r = staff_client.get("/saves/cast/viewers/alice/buffer/?before=garbage")
    assert r.status_code == 200
    assert "cursor is not one this inspector handed out" in r.content.decode()


def test_unknown_viewer_is_404(staff_client, cast) -> None:
    assert staff_client.get("/saves/cast/viewers/nobody/").status_code == 404
    assert staff_client.get("/saves/cast/viewers/nobody/buffer/").status_code == 404


def test_script_in_a_description_is_escaped(staff_client, cast) -> None:
    remember("alice", v1("<script>alert(1)</script>", "bob"), timestamp="2026-07-06T12:05:00.000Z")
    body = staff_client.get("/saves/cast/viewers/alice/?qa=1").content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "the hooded figure &lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_script_in_an_alias_is_escaped_on_the_overview(staff_client, cast) -> None:
    WorldObject.objects.filter(id="alice").update(aliases_json=json.dumps([["bob", "<b>bold</b>"]]))
    body = staff_client.get("/saves/cast/").content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "<b>bold</b>" not in body


def test_overview_matrix_and_search(staff_client, cast) -> None:
    body = staff_client.get("/saves/cast/").content.decode()
    assert (
        'class="state-descriptor" data-viewer="alice" data-target="bob" title="descriptor">'
        "the hooded figure</td>" in body
    )
    assert (
        'class="state-known" data-viewer="charlie" data-target="bob" title="known">Gareth</td>'
        in body
    )
    assert (
        'class="state-unknown" data-viewer="bob" data-target="charlie" title="unknown">—</td>'
        in body
    )
    body = staff_client.get(
        "/saves/cast/?q=gareth", headers={"HX-Request": "true"}
    ).content.decode()
    assert (
        '<a href="/saves/cast/viewers/bob/">Gareth</a><br><span class="muted small">'
        '<code class="id-hint">bob</code> · tavern</span>' in body
    )
    assert '<a href="/saves/cast/viewers/alice/">' not in body


def test_aliases_panel_shows_state_true_name_and_suggestion(staff_client, cast) -> None:
    body = staff_client.get(
        "/saves/cast/viewers/alice/aliases/", headers={"HX-Request": "true"}
    ).content.decode()
    assert 'value="the hooded figure"' in body
    assert (
        '<th scope="row"><span class="qa-info" title="true name: QA information, never shown to '
        'the viewer">Gareth</span> <code class="id-hint">bob</code>' in body
    )
    assert (
        "the tall cloaked man" in body or "the tall" in body
    )  # derived from bob's PUBLIC appearance


def test_alias_inline_edit_changes_buffer_and_history(staff_client, staff, chest) -> None:
    r = staff_client.post(
        "/saves/cast/viewers/alice/aliases/bob/",
        {"label": "Gareth", "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200
    assert r.headers["HX-Trigger"] == "aliases-changed"
    body = r.content.decode()
    assert body.lstrip().startswith('<section id="aliases-panel"')
    assert "“the hooded figure” → “Gareth”" in body
    assert json.loads(WorldObject.objects.get(id="alice").aliases_json) == [
        ["bob", "Gareth"],
        ["charlie", "the bartender"],
    ]
    change = AliasChange.objects.get()
    assert (change.before, change.after, change.changed_by, change.source) == (
        "the hooded figure",
        "Gareth",
        staff,
        "inspector",
    )
    assert AuditLog.objects.filter(action="alias.set").count() == 1
    buffer = staff_client.get("/saves/cast/viewers/alice/buffer/").content.decode()
    assert "[12:03:00 PM] Gareth opened the wooden chest (Outcome: Succeeded)" in buffer


def test_alias_edit_without_js_redirects(staff_client, chest) -> None:
    r = staff_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger", "action": "set"}
    )
    assert r.status_code == 302 and r.url == "/saves/cast/viewers/alice/aliases/"


def test_alias_delete(staff_client, chest) -> None:
    staff_client.post("/saves/cast/viewers/alice/aliases/bob/", {"action": "delete"})
    assert json.loads(WorldObject.objects.get(id="alice").aliases_json) == [
        ["charlie", "the bartender"]
    ]
    buffer = staff_client.get("/saves/cast/viewers/alice/buffer/").content.decode()
    assert (
        "[12:03:00 PM] an unfamiliar figure opened the wooden chest (Outcome: Succeeded)" in buffer
    )
    assert AliasChange.objects.get().after is None


@pytest.mark.parametrize(
    ("target", "label", "error"),
    [
        ("bob", "charlie", "label &#x27;charlie&#x27; is a system id"),
        ("bob", "x 0f8fad5b-d9cb-469f-a165-70867728950e", "contains a generated id"),
        ("alice", "me", "an entity&#x27;s alias for itself is never used"),
        ("nobody", "a ghost", "target &#x27;nobody&#x27; is not an object of this world"),
        ("bob", "   ", "label must not be empty"),
    ],
)
def test_alias_edit_validation_inline(staff_client, cast, target, label, error) -> None:
    before = WorldObject.objects.get(id="alice").aliases_json
    r = staff_client.post(
        f"/saves/cast/viewers/alice/aliases/{target}/",
        {"label": label, "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200
    assert "HX-Trigger" not in r.headers
    assert error in r.content.decode()
    assert WorldObject.objects.get(id="alice").aliases_json == before
    assert not AliasChange.objects.exists()
    r = staff_client.post(
        f"/saves/cast/viewers/alice/aliases/{target}/", {"label": label, "action": "set"}
    )
    assert r.status_code == 400 and error in r.content.decode()


def test_alias_warning_for_label_with_another_id(staff_client, cast) -> None:
    r = staff_client.post(
        "/saves/cast/viewers/alice/aliases/bob/",
        {"label": "charlie's friend", "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert "contains the system id &#x27;charlie&#x27;" in r.content.decode()


def test_alias_edit_forbidden_for_readers(client, reader, cast) -> None:
    client.force_login(reader)
    assert client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "x"}).status_code == 403
    body = client.get("/saves/cast/viewers/alice/aliases/").content.decode()
    assert 'class="alias-form"' not in body


def test_viewer_switch_links_are_permalinks_with_htmx(staff_client, cast) -> None:
    body = staff_client.get("/saves/cast/viewers/alice/").content.decode()
    assert (
        '<a href="/saves/cast/viewers/bob/" hx-get="/saves/cast/viewers/bob/" hx-target="#viewer-panels" '
        'hx-swap="outerHTML" hx-push-url="true" data-viewer-id="bob">Gareth '
        '<code class="id-hint">bob</code></a>' in body
    )


def test_entry_page(staff_client, chest) -> None:
    r = staff_client.get(f"/saves/cast/viewers/alice/entries/{chest.id}/")
    assert r.status_code == 200 and CHEST_LINE in r.content.decode()
    assert staff_client.get("/saves/cast/viewers/alice/entries/nope/").status_code == 404


# --- long-term faces, entry notes, prompt highlights, leak report, projections ---------------


def fragment(client, url: str) -> str:
    r = client.get(url, headers={"HX-Request": "true"})
    assert r.status_code == 200, url
    return r.content.decode().strip()


def test_faces_panel_default_face_hides_shadowed_and_superseded(staff_client, demo) -> None:
    body = fragment(staff_client, "/saves/demo/viewers/npc-tobiah/faces/")
    assert body.startswith('<section id="faces-panel"')
    ids = [part.split('"')[0] for part in body.split('data-entry-id="')[1:]]
    assert ids == [
        "abs-tobiah-signal-nights",
        "ltm-tobiah-03",
        "lore-brandy",
        "lore-lighthouse",
        "lore-signal",
    ]
    assert "shadowed by" not in body and "superseded by" not in body
    assert 'href="/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1"' in body
    # A link's state is in its words (aria-pressed belongs to buttons: axe flags it on a link).
    assert 'data-state="off">Shadowed &amp; superseded: hidden</a>' in body


def test_faces_panel_include_shadowed_tags_and_groups_under_rollup(staff_client, demo) -> None:
    body = fragment(staff_client, "/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1")
    ids = [part.split('"')[0] for part in body.split('data-entry-id="')[1:]]
    # the superseded member sits inside the rollup that absorbed it, the shadowed entry inside
    # the home entry whose name retires it
    assert ids == [
        "abs-tobiah-signal-nights",
        "ltm-tobiah-01",
        "ltm-tobiah-03",
        "lore-gullwing",
        "lore-brandy",
        "lore-lighthouse",
        "lore-signal",
    ]
    assert (
        '<p class="face-reason">Your own note “The Gullwing” replaces the Smugglers&#x27; lore '
        "(faction) entry of the same name.</p>"
    ) in body
    assert (
        '<p class="face-replaces">Replaces <a href="/saves/demo/viewers/npc-tobiah/entries/lore-gullwing/">'
        "“The Gullwing”</a> in Smugglers&#x27; lore (faction): the viewer reads this one "
        "instead.</p>"
    ) in body
    assert (
        '<p class="face-reason">Rolled up into <a href="/saves/demo/viewers/npc-tobiah/entries/'
        'abs-tobiah-signal-nights/">“Signal Nights”</a>: the viewer reads the rollup '
        "instead.</p>"
    ) in body
    assert "[shadowed]" not in body and "[superseded]" not in body
    assert '<ul class="absorbed" aria-label="Superseded by Signal Nights">' in body
    assert '<ul class="shadowed-under" aria-label="Shadowed by The Gullwing">' in body
    assert (
        "Withheld (retracted or flagged; delivered by id only): "
        '<a href="/saves/demo/viewers/npc-tobiah/entries/ltm-tobiah-02/">“Brandy Route”</a>'
    ) in body
    # five on top, whatever is shown beneath them
    assert "5 entries on top · 1 shadowed and 1 superseded shown beneath what replaces them" in body
    assert (
        'href="/saves/demo/viewers/npc-tobiah/faces/"' in body
    )  # the toggle back is a permalink too
    # the full page keeps the toggle state
    page = staff_client.get("/saves/demo/viewers/npc-tobiah/?include_shadowed=1").content.decode()
    assert "replaces the Smugglers&#x27; lore (faction) entry" in page
    hidden = fragment(staff_client, "/saves/demo/viewers/npc-tobiah/faces/")
    assert "5 entries on top · 1 shadowed and 1 superseded hidden" in hidden
    assert 'data-entry-id="lore-gullwing"' not in hidden
    assert "“The Gullwing”</a> in Smugglers&#x27; lore (faction)" in hidden


def test_faces_panel_warns_of_two_entries_on_top_under_one_name(staff_client, demo) -> None:
    body = fragment(staff_client, "/saves/demo/viewers/npc-oswin/faces/")
    warning = (
        '<p class="face-same-name" role="note"><strong>Same name:</strong> '
        '<a href="/saves/demo/viewers/npc-oswin/entries/ltm-oswin-02/">“The Lighthouse”</a> (your own '
        "notes, <code>oswin/lighthouse-repairs</code>) is also on top under this name"
    )
    assert warning in body
    assert body.count('class="face-same-name"') == 2  # each of the two names the other
    assert "8 entries on top · 2 shadowed hidden" in body


def test_entry_page_long_term_member_names_its_rollup(staff_client, demo) -> None:
    r = staff_client.get("/saves/demo/viewers/npc-tobiah/entries/ltm-tobiah-01/")
    body = r.content.decode()
    assert r.status_code == 200
    assert '<h1>The Signal <code class="id-hint">ltm-tobiah-01</code></h1>' in body
    assert (
        "<li><code>[superseded] consolidated into abs-tobiah-signal-nights; "
        "delivered by id as evidence</code></li>"
    ) in body
    assert (
        '<p>Rolled up into <a href="/saves/demo/viewers/npc-tobiah/entries/abs-tobiah-signal-nights/">'
        "“Signal Nights”</a>.</p>"
    ) in body
    assert (
        '<link rel="alternate" type="application/json" href="/api/saves/demo/viewers/npc-tobiah/long-term/ltm-tobiah-01">'
        in body
    )


def test_entry_page_rollup_lists_members_and_shadowed_note(staff_client, demo) -> None:
    body = staff_client.get(
        "/saves/demo/viewers/npc-tobiah/entries/abs-tobiah-signal-nights/"
    ).content.decode()
    members = body.split('<ul class="members">')[1].split("</ul>")[0]
    assert [p.split("/")[0] for p in members.split("/entries/")[1:]] == [
        "ltm-tobiah-01",
        "m-b11-tobiah",
        "m-d01-tobiah",
    ]
    # members by title: a long-term entry by its name, a buffer memory by the line it reads
    assert '/entries/ltm-tobiah-01/">The Signal</a>' in members
    assert '/entries/m-d01-tobiah/">I hope the brass-buttoned woman doesn&#x27;t look' in members
    shadowed = staff_client.get(
        "/saves/demo/viewers/npc-tobiah/entries/lore-gullwing/"
    ).content.decode()
    assert (
        '<li>Off the default face: your own note <a href="/saves/demo/viewers/npc-tobiah/entries/'
        'ltm-tobiah-03/">“The Gullwing”</a> replaces this Smugglers&#x27; lore (faction) entry '
        "of the same name.</li>"
    ) in shadowed
    assert '<ul class="notes"><li><code>[shadowed]' in shadowed
    carrier = staff_client.get(
        "/saves/demo/viewers/npc-tobiah/entries/ltm-tobiah-03/"
    ).content.decode()
    assert (
        '<li>Replaces <a href="/saves/demo/viewers/npc-tobiah/entries/lore-gullwing/">“The Gullwing”</a> '
        "in Smugglers&#x27; lore (faction): Tobiah Crane reads this one instead.</li>"
    ) in carrier
    assert "nothing shadows or supersedes it" not in carrier
    assert (
        staff_client.get("/saves/demo/viewers/npc-tobiah/entries/nothing-here/").status_code == 404
    )


def test_entry_page_names_people_and_pretty_prints_the_intent(staff_client, demo) -> None:
    body = staff_client.get("/saves/demo/viewers/npc-tobiah/entries/m-b11-tobiah/").content.decode()
    assert "<title>Memory m-b11-tobiah — Tobiah Crane — Omnia Memory Inspector</title>" in body
    assert (
        '<dt>actor</dt><dd><a href="/saves/demo/viewers/npc-sable/">Sable Quint</a> '
        '<code class="id-hint">npc-sable</code>'
    ) in body
    assert '<pre class="qa-intent entry-json">{\n  &quot;type&quot;: &quot;dialogue&quot;,' in body
    assert (
        '<dt>rolled up into</dt><dd><a href="/saves/demo/viewers/npc-tobiah/entries/'
        'abs-tobiah-signal-nights/">“Signal Nights”</a></dd>'
    ) in body


def test_highlight_cuts_at_offsets_and_skips_overlaps() -> None:
    from memory.selectors.prompt_view import Segment, highlight

    a = {"start": 4, "end": 7, "kind": "system_id"}
    b = {"start": 5, "end": 9, "kind": "unknown_name"}  # overlaps a: dropped
    c = {"start": 10, "end": 12, "kind": "private_attribute"}
    assert highlight("say <b> x yz", [a, b, c]) == [
        Segment("say "),
        Segment("<b>", a, 1, 4),
        Segment(" x "),
        Segment("yz", c, 3, 10),
    ]
    # A finding with several occurrences is cut at each, under its one number.
    d = {**a, "occurrences": [{"start": 0, "end": 3}, {"start": 10, "end": 12}]}
    assert highlight("say <b> x yz", [d]) == [
        Segment("say", d, 1, 0),
        Segment(" <b> x "),
        Segment("yz", d, 1, 10),
    ]
    assert highlight("", []) == []


def test_prompt_page_highlights_the_planted_leak(staff_client, demo) -> None:
    r = staff_client.get("/saves/demo/viewers/npc-pip/prompt/")
    body = r.content.decode()
    assert r.status_code == 200
    assert body.count('<mark id="leak-at-') == 1
    assert (
        '<mark id="leak-at-1967" class="leak leak-unknown_name" tabindex="0" '
        'data-kind="unknown_name" '
        'title="unknown_name: Pip Dunn knows Sable Quint only as &#x27;the tall one in grey&#x27;" '
        'aria-describedby="leak-1">Sable Quint</mark>'
    ) in body
    assert (
        '<li id="leak-1" value="1"><a href="#leak-at-1967"><strong>unknown_name</strong> '
        "“Sable Quint”</a> in Recent memories" in body
    )
    # omnia's own lines are the prompt's (issue 30); where omnia renders one wrongly without
    # leaking, the quieter list marks the words, with the corrected reading beside them.
    assert re.findall(r'<li data-kind="grammar">omnia renders this line wrongly: “(.*?)” '
                      r'<span class="muted">— grammar; corrected: “(.*?)”</span></li>', body) == [
        ('The sailor with the eye patch <mark class="flaw flaw-grammar" title="grammar">haul'
         "</mark> a crate off the Gullwing onto the quay (Outcome: Succeeded)", "hauls"),
        ("The tall one in grey says &#x27;Morning. Doors shut behind me, if you please.&#x27; to "
         'Maren Holloway, the sailor with the eye patch and <mark class="flaw flaw-grammar" '
         'title="grammar">I</mark>', "me"),
    ]  # fmt: skip
    assert (
        '<button type="button" class="copy-button" data-copy="#prompt-text">Copy prompt</button>'
        in body
    )
    assert "<script>" not in body.split('<main id="main"')[1]  # no inline script
    assert (
        '<link rel="alternate" type="application/json" href="/api/saves/demo/viewers/npc-pip/prompt">'
        in body
    )
    frag = fragment(staff_client, "/saves/demo/viewers/npc-pip/prompt/")
    assert frag.startswith('<section id="prompt-panel"') and "<html" not in frag


def test_prompt_page_escapes_the_text_around_marks(staff_client, cast) -> None:
    remember("alice", v1("<script>alert(1)</script> chalked on a shutter", "bob"))
    body = staff_client.get("/saves/cast/viewers/alice/prompt/").content.decode()
    text = body.split('<pre id="prompt-text" class="prompt-text">')[1].split("</pre>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; chalked on a shutter" in text
    assert "<script>" not in text


DEMO_CSV_HEADER = (
    "world_id,viewer_id,section,kind,text,count,start,end,entity_id,reason,source_id,context,"
    "state,accepted_reason"
)


def test_leak_report_lists_filters_and_exports(staff_client, demo) -> None:
    body = staff_client.get("/saves/demo/leaks/").content.decode()
    assert '<h2 id="leak-title">4 findings</h2>' in body
    rows = body.split("<tbody>")[1].split("</tbody>")[0]
    assert [r.split('data-kind="')[1].split('"')[0] for r in rows.split("<tr ")[1:]] == [
        "system_id",
        "private_attribute",
        "system_id",
        "unknown_name",
    ]
    pip = fragment(staff_client, "/saves/demo/leaks/?viewer=npc-pip")
    assert pip.startswith('<section id="leak-table"')
    assert '<h2 id="leak-title">1 finding for Pip Dunn</h2>' in pip
    assert "<mark>Sable Quint</mark>" in pip
    kind = staff_client.get("/saves/demo/leaks/?kind=system_id").content.decode()
    assert '<h2 id="leak-title">2 findings of kind system_id</h2>' in kind
    data = staff_client.get("/saves/demo/leaks/?format=json&viewer=npc-pip").json()
    assert data["count"] == 1
    (finding,) = data["items"]
    assert {k: finding[k] for k in ("viewer_id", "section", "kind", "text", "entity_id")} == {
        "viewer_id": "npc-pip",
        "section": "Recent memories",
        "kind": "unknown_name",
        "text": "Sable Quint",
        "entity_id": "npc-sable",
    }
    csv_r = staff_client.get("/saves/demo/leaks/?format=csv&kind=private_attribute")
    assert csv_r["Content-Type"] == "text/csv; charset=utf-8"
    lines = csv_r.content.decode().splitlines()
    assert lines[0] == DEMO_CSV_HEADER
    assert len(lines) == 2 and ",private_attribute," in lines[1] and "signal_code" in lines[1]
    assert lines[1].endswith(",open,")
    assert (
        staff_client.get("/saves/demo/leaks.csv").content
        == staff_client.get("/saves/demo/leaks/?format=csv").content
    )
    assert staff_client.get("/saves/demo/leaks.json").json()["count"] == 4
    assert staff_client.get("/saves/demo/leaks/?format=xml").status_code == 400


def test_overview_shows_leak_counts_and_projection_status(staff_client, demo) -> None:
    body = staff_client.get("/saves/demo/").content.decode()
    row = body.split('<tr data-viewer="npc-pip">')[1].split("</tr>")[0]
    assert "<td>0</td><td>1</td><td>0</td>" in row  # system_id, unknown_name, private_attribute
    assert '<strong class="lag-rows">0</strong> rows written but not yet folded' in body
    assert body.count('<tr><th scope="row">') >= 4  # one row per shard
    assert (
        'action="/saves/demo/projections/cycle/"' in body
        and 'action="/saves/demo/projections/verify/"' in body
    )


def test_projection_buttons_run_a_cycle_and_verify(staff_client, demo) -> None:
    remember("npc-pip", v1("counted gulls", "npc-pip"))
    assert (
        '<strong class="lag-rows">1</strong> row written'
        in staff_client.get("/saves/demo/").content.decode()
    )
    r = staff_client.post("/saves/demo/projections/cycle/")
    assert r.status_code == 302 and r.url == "/saves/demo/"
    page = staff_client.get("/saves/demo/").content.decode()
    assert "Cycle done: 1 rows folded, 1 sessions written, 3 rows visited." in page
    assert '<strong class="lag-rows">0</strong>' in page
    frag = (
        staff_client.post("/saves/demo/projections/verify/", headers={"HX-Request": "true"})
        .content.decode()
        .strip()
    )
    assert frag.startswith('<section id="projection-panel"')
    assert (
        '<p class="result" role="status">Verify: 20 of 20 sessions identical to a rebuild.</p>'
        in frag
    )


def test_projection_buttons_need_the_editor_role_and_post(client, reader, demo) -> None:
    client.force_login(reader)
    assert client.post("/saves/demo/projections/cycle/").status_code == 403
    assert "Run a cycle" not in client.get("/saves/demo/").content.decode()
    assert client.get("/saves/demo/projections/cycle/").status_code == 405


def test_aliases_panel_caps_strangers_and_links_show_all(staff_client, cast, monkeypatch) -> None:
    from memory.web.views import alias_panel

    monkeypatch.setattr(alias_panel, "ALIASES_SHOWN", 1)
    body = fragment(staff_client, "/saves/cast/viewers/alice/aliases/")
    # alice names both bob and charlie, so both stay; nothing is hidden
    assert 'data-target="bob"' in body and 'data-target="charlie"' in body
    assert "Show all" not in body
    WorldObject.objects.create(id="dora", type="entity", world_id="tavern", aliases_json="[]")
    WorldObject.objects.create(id="eve", type="entity", world_id="tavern", aliases_json="[]")
    body = fragment(staff_client, "/saves/cast/viewers/alice/aliases/")
    assert 'data-target="dora"' not in body and 'data-target="eve"' not in body
    assert "2 more entities this viewer has no name for." in body
    assert 'href="/saves/cast/viewers/alice/aliases/?all_aliases=1"' in body
    every = fragment(staff_client, "/saves/cast/viewers/alice/aliases/?all_aliases=1")
    assert 'data-target="dora"' in every and 'data-target="eve"' in every


def test_viewer_switch_shows_a_window_around_the_viewer(staff_client, cast, monkeypatch) -> None:
    import re

    from memory.web.views import viewer_panels

    for i in range(6):
        WorldObject.objects.create(
            id=f"npc-{i}", type="entity", world_id="tavern", aliases_json="[]"
        )
    # The tavern now has alice, bob, charlie, npc-0..npc-5: nine viewers, in id order.
    monkeypatch.setattr(viewer_panels, "VIEWERS_SHOWN", 4)

    def switch(viewer_id: str) -> tuple[list[str], str | None, str]:
        body = staff_client.get(f"/saves/cast/viewers/{viewer_id}/").content.decode()
        nav = body[
            body.index('<nav class="viewer-switch"') : body.index(
                "</nav>", body.index('<nav class="viewer-switch"')
            )
        ]
        links = re.findall(r'<a href="/saves/cast/viewers/([^/]+)/"', nav)
        current = re.search(r'<a href="/saves/cast/viewers/([^/]+)/"[^>]*aria-current="page"', nav)
        return links, current.group(1) if current else None, nav

    links, current, nav = switch("npc-2")
    assert links == ["npc-0", "npc-1", "npc-2", "npc-3"]  # two before, then the viewer
    assert current == "npc-2"
    assert "5 more of 9" in nav and 'href="/saves/cast/"' in nav
    assert switch("alice")[0] == ["alice", "bob", "charlie", "npc-0"]  # clamped at the start
    assert switch("npc-5")[0] == ["npc-2", "npc-3", "npc-4", "npc-5"]  # and at the end
    monkeypatch.setattr(viewer_panels, "VIEWERS_SHOWN", 50)
    links, current, nav = switch("bob")
    assert len(links) == 9 and current == "bob" and "more of" not in nav


def test_alias_suggestions_are_derived_only_for_the_rows_shown(
    staff_client, cast, monkeypatch
) -> None:
    from memory.selectors import aliases
    from memory.web.views import alias_panel

    for i in range(5):
        WorldObject.objects.create(
            id=f"npc-{i}", type="entity", world_id="tavern", aliases_json="[]"
        )
    monkeypatch.setattr(alias_panel, "ALIASES_SHOWN", 3)
    derived: list[int] = []
    real = aliases.derive_descriptor
    monkeypatch.setattr(
        aliases, "derive_descriptor", lambda *a, **k: derived.append(1) or real(*a, **k)
    )
    body = fragment(staff_client, "/saves/cast/viewers/alice/aliases/")
    # alice names bob and charlie; one stranger fills the third place; four are hidden.
    assert "4 more entities this viewer has no name for." in body
    assert len(derived) == 3


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/saves/cast/viewers/al%00ice/", 404),
        ("/saves/cast/viewers/al%00ice/buffer/", 404),
        ("/saves/cast/viewers/alice/entries/x%00/", 404),
        ("/saves/cast/viewers/?viewer=al%00ice", 400),
        ("/?q=a%00", 400),
        ("/saves/cast/leaks/?viewer=a%00", 400),
        ("/saves/cast/viewers/alice/buffer/?q=a%00", 400),
    ],
)
def test_nul_in_a_page_url_is_a_4xx_on_every_backend(staff_client, cast, url, status) -> None:
    assert staff_client.get(url).status_code == status


def test_nul_in_an_alias_edit_is_refused_before_the_database(staff_client, cast) -> None:
    r = staff_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "a\x00b", "action": "set"}
    )
    assert r.status_code == 400
    assert "label contains control characters" in r.content.decode()
    assert (
        staff_client.post("/saves/cast/viewers/alice/aliases/b%00b/", {"label": "x"}).status_code
        == 404
    )
    assert not AliasChange.objects.exists()


def test_aliases_first_paint_shows_every_label_and_a_few_strangers(
    staff_client, cast, monkeypatch
) -> None:
    """Past ALIASES_SHOWN targets, strangers stop at STRANGERS_SHOWN even with room left under
    ALIASES_SHOWN; labelled rows never do."""
    import re

    from memory.web.views import alias_panel

    monkeypatch.setattr(alias_panel, "ALIASES_SHOWN", 6)
    monkeypatch.setattr(alias_panel, "STRANGERS_SHOWN", 2)
    for i in range(5):
        WorldObject.objects.create(
            id=f"npc-{i}", type="entity", world_id="tavern", aliases_json="[]"
        )
    body = fragment(staff_client, "/saves/cast/viewers/alice/aliases/")
    # alice names bob and charlie (kept, in id order with the strangers); then npc-0, npc-1
    assert re.findall(r'<tr id="alias-[^"]+" data-target="([^"]+)"', body) == [
        "bob",
        "charlie",
        "npc-0",
        "npc-1",
    ]
    assert "3 more entities this viewer has no name for." in body
    every = fragment(staff_client, "/saves/cast/viewers/alice/aliases/?all_aliases=1")
    assert len(re.findall(r'<tr id="alias-', every)) == 7
    assert "more entit" not in every


def test_aliases_of_a_viewer_who_knows_many_come_a_page_of_labels_at_a_time(
    editor_client, cast, monkeypatch
) -> None:
    """Past ALIASES_SHOWN targets the labelled rows are paged (LABELS_SHOWN at a time, the
    first page with a few strangers); an edit answers with the page it was made on, the row
    it touched kept in sight."""
    import json
    import re

    from memory.web.views import alias_panel

    monkeypatch.setattr(alias_panel, "ALIASES_SHOWN", 3)
    monkeypatch.setattr(alias_panel, "LABELS_SHOWN", 2)
    for i in range(5):
        WorldObject.objects.create(
            id=f"npc-{i}", type="entity", world_id="tavern", aliases_json="[]"
        )
    known = [["bob", "the hooded figure"], ["charlie", "the bartender"]]
    known += [[f"npc-{i}", f"sailor {i}"] for i in range(3)]
    WorldObject.objects.filter(id="alice").update(aliases_json=json.dumps(known))
    base = "/saves/cast/viewers/alice/aliases/"

    def panel(body: str) -> tuple[list[str], list[str]]:
        rows = re.findall(r'<tr id="alias-[^"]+" data-target="([^"]+)"', body)
        notes = [
            re.sub(r"<[^>]+>", "", p) for p in re.findall(r'<p class="small[^"]*">(.*?)</p>', body)
        ]
        return rows, notes

    first = fragment(editor_client, base)
    assert panel(first) == (
        ["bob", "charlie", "npc-3"],
        ["Labels 1–2 of 5 · later labels →", "1 more entity this viewer has no name for. Show all"],
    )
    assert f'href="{base}?aliases_from=2"' in first
    second = fragment(editor_client, f"{base}?aliases_from=2")
    assert panel(second) == (
        ["npc-0", "npc-1"],
        [
            "Labels 3–4 of 5 · ← earlier labels · later labels →",
            "2 more entities this viewer has no name for. Show all",
        ],
    )
    assert f'action="{base}npc-1/?aliases_from=2"' in second
    assert panel(fragment(editor_client, f"{base}?aliases_from=4"))[0] == ["npc-2"]
    # An offset that is no plain number (a digit int() refuses, among them) is the first page.
    assert panel(fragment(editor_client, f"{base}?aliases_from=%C2%B2")) == panel(first)
    # Forget npc-0 on the second page: it is a stranger now, kept in sight where it was edited.
    forgot = editor_client.post(
        f"{base}npc-0/?aliases_from=2", {"action": "delete"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert panel(forgot)[0] == ["npc-0", "npc-1", "npc-2"]
    assert "Labels 3–4 of 4 · ← earlier labels" in panel(forgot)[1][0]
    # Without htmx, the edit lands back on the page it was made on.
    done = editor_client.post(f"{base}npc-1/?aliases_from=2", {"label": "the bosun"})
    assert (done.status_code, done["Location"]) == (302, f"{base}?aliases_from=2")


@pytest.mark.parametrize(
    "target", ["bob", "a/b", "50%", "x%2Fy", "Ünïcode ok", "q?x=1#f", "semi;colon'&+"]
)
def test_alias_edit_urls_spliced_once_match_reverse(target) -> None:
    from urllib.parse import unquote

    from django.urls import resolve, reverse

    from memory.active_save import use
    from memory.models import Save
    from memory.web.views._common import reverse_each

    with use(Save(name="s1")):
        urls = reverse_each("memory:alias_edit", ["al/ice%"], [target])
        viewer_urls = reverse_each("memory:viewer", [], [target])
    assert urls == {target: reverse("memory:alias_edit", args=["s1", "al/ice%", target])}
    # the server unquotes the path once before resolving it
    assert resolve(unquote(urls[target])).kwargs == {
        "save": "s1",
        "viewer_id": "al/ice%",
        "target_id": target,
    }
    assert viewer_urls == {target: reverse("memory:viewer", args=["s1", target])}
