"""The inspector pages as designers want them (issue 15 items 1-4), through the pages and their
JSON twins: names first, one match opens, non-agents apart, panel URLs in focus, linked
panels, one time format, oldest first."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.template import Context, Template

from memory.models import WorldObject
from memory.selectors import viewers

ISOLDE = "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"


def fragment(client, url: str) -> str:
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


# --- names first -----------------------------------------------------------------------------


def test_display_names_are_true_names_else_ids_in_one_query(
    demo, django_assert_num_queries
) -> None:
    with django_assert_num_queries(1):
        names = viewers.display_names([ISOLDE, "npc-pip", "no-such-entity"])
    assert names == {
        ISOLDE: "Isolde Varga",
        "npc-pip": "Pip Dunn",
        "no-such-entity": "no-such-entity",
    }
    assert viewers.display_names([]) == {}


def test_display_names_of_many_ids_read_the_save_s_names_once(
    demo, monkeypatch, django_assert_num_queries
) -> None:
    """Past NAMED_BY_ID_UPTO ids, every name of the save is read once, without the list:
    the same names as asking by id, still one query, no other save's names."""
    from memory.models import Attribute, Save, WorldObject

    other = Save.objects.create(name="other")
    WorldObject.every_save.create(game_save=other, id="npc-pip", type="entity")
    Attribute.every_save.create(game_save=other, object_id="npc-pip", name="name", value="Nope")
    ids = [*WorldObject.objects.values_list("id", flat=True), "no-such-entity", "npc-pip"]
    by_id = viewers.display_names(ids)
    monkeypatch.setattr(viewers, "NAMED_BY_ID_UPTO", 2)
    with django_assert_num_queries(1):
        whole = viewers.display_names(ids, known={"npc-tobiah": "Known"})
    assert whole == {**by_id, "npc-tobiah": "Known"}
    assert whole["npc-pip"] == "Pip Dunn" and whole["no-such-entity"] == "no-such-entity"
    assert len(whole) > 3


def test_overview_lists_names_and_keeps_non_agents_apart(staff_client, demo) -> None:
    WorldObject.objects.create(id="crate-7", type="entity", world_id="harbor-town", is_agent=0)
    body = staff_client.get("/saves/demo/").content.decode()
    assert (
        f'<li><a href="/saves/demo/viewers/{ISOLDE}/">Isolde Varga</a><br><span class="muted small">'
        f'<code class="id-hint">{ISOLDE}</code> · harbor-town</span></li>' in body
    )
    listed, apart = body.split('<ul class="viewer-list non-agents"')
    assert "crate-7" not in listed.split('id="viewer-list"')[1]
    assert '<a href="/saves/demo/viewers/crate-7/">crate-7</a>' in apart.split("</ul>")[0]
    # A matrix column (others may name it), never a row (it names nobody).
    assert (
        '<th scope="col" data-target="crate-7">crate-7</th>'
        in body.split('<table class="matrix"')[1]
    )
    matrix = body.split('<table class="matrix"')[1]
    assert 'data-viewer="crate-7"' not in matrix
    assert (
        '<th scope="col" data-target="npc-pip">Pip Dunn <code class="id-hint">npc-pip</code>'
        in body
    )
    # The switcher lists viewers only.
    switch = staff_client.get("/saves/demo/viewers/npc-pip/").content.decode().split("</nav>")[1]
    assert 'data-viewer-id="crate-7"' not in switch


def test_the_json_twin_names_entities_as_the_page_does(staff_client, demo) -> None:
    items = staff_client.get("/api/saves/demo/entities?q=npc-").json()["items"]
    page = staff_client.get("/saves/demo/?q=npc-", headers={"HX-Request": "true"}).content.decode()
    shown = re.findall(r'<a href="/saves/demo/viewers/([^/]+)/">([^<]+)</a>', page)
    assert [(i["id"], i["name"]) for i in items] == shown
    assert ("npc-tobiah", "Tobiah Crane") in shown


def test_a_search_with_one_match_opens_the_viewer(staff_client, demo) -> None:
    r = staff_client.get("/saves/demo/?q=isolde")
    assert (r.status_code, r.headers["Location"]) == (302, f"/saves/demo/viewers/{ISOLDE}/")
    # The live list (htmx, while typing) never jumps; several matches list them.
    assert (
        staff_client.get("/saves/demo/?q=isolde", headers={"HX-Request": "true"}).status_code == 200
    )
    assert staff_client.get("/saves/demo/?q=npc-").status_code == 200
    assert staff_client.get("/saves/demo/?q=nobody-at-all").status_code == 200


def test_viewer_page_is_titled_by_name(staff_client, demo) -> None:
    body = staff_client.get(f"/saves/demo/viewers/{ISOLDE}/").content.decode()
    assert "<title>Isolde Varga — Omnia Memory Inspector</title>" in body
    assert (
        '<h1><span class="viewer-name">Isolde Varga</span> '
        f'<code class="id-hint viewer-id">{ISOLDE}</code>' in body
    )


# --- panels: focus and links ---------------------------------------------------------------


@pytest.mark.parametrize("panel", ["aliases", "buffer", "sessions", "faces"])
def test_a_panel_url_marks_its_panel_in_focus(staff_client, demo, panel) -> None:
    body = staff_client.get(f"/saves/demo/viewers/npc-pip/{panel}/").content.decode()
    assert body.count("data-focus") == 1
    assert re.search(
        rf'<section id="{panel}-panel" class="panel[^"]* focused"[^>]* aria-current="true" '
        r'tabindex="-1" data-focus',
        body,
    )
    assert "data-focus" not in staff_client.get("/saves/demo/viewers/npc-pip/").content.decode()
    # The panel re-reading itself (the buffer after an alias edit) does not grab focus.
    refresh = staff_client.get(
        f"/saves/demo/viewers/npc-pip/{panel}/",
        headers={"HX-Request": "true", "HX-Trigger": f"{panel}-panel"},
    )
    assert "data-focus" not in refresh.content.decode()


def test_a_selected_line_marks_its_session_episode_and_aliases(staff_client, demo) -> None:
    # m-d02-pip: Isolde (the lady with brass buttons) to Tobiah (the sailor), conv-standoff.
    body = staff_client.get("/saves/demo/viewers/npc-pip/?line=m-d02-pip").content.decode()
    assert re.search(r'<li id="line-m-d02-pip" class="buffer-line selected"', body)
    assert re.findall(r'<tr id="session-[^"]+" data-session="([^"]+)" class="selected"', body) == [
        "conv-standoff"
    ]
    assert re.findall(r'<li id="episode-(\d+)" value="\d+" class="selected"', body) == ["3"]
    assert sorted(
        re.findall(r'<tr id="alias-[^"]+" data-target="([^"]+)" class="selected"', body)
    ) == (sorted([ISOLDE, "npc-tobiah"]))
    # Each line's time is its permalink: the page with this line selected, same buffer state.
    assert (
        'href="/saves/demo/viewers/npc-pip/?type=dialogue&amp;line=m-d02-pip#line-m-d02-pip"'
        in (staff_client.get("/saves/demo/viewers/npc-pip/buffer/?type=dialogue").content.decode())
    )
    # A stale line id is the page with nothing selected, not an error.
    stale = staff_client.get("/saves/demo/viewers/npc-pip/?line=gone")
    assert stale.status_code == 200 and 'class="selected"' not in stale.content.decode()


def test_an_alias_row_links_to_the_lines_naming_it_and_the_twin_agrees(staff_client, demo) -> None:
    aliases = fragment(staff_client, "/saves/demo/viewers/npc-pip/aliases/")
    assert (
        'href="/saves/demo/viewers/npc-pip/buffer/?uses=npc-sable" hx-get="/saves/demo/viewers/npc-pip/buffer/?uses=npc-sable"'
        in aliases
    )
    body = fragment(staff_client, "/saves/demo/viewers/npc-pip/buffer/?uses=npc-sable")
    # Lines as the viewer's alias names them: the corrected reading where omnia's differs.
    lines = re.findall(
        r'<span class="line(?: line-corrected" data-reading="corrected)?">([^<]+)</span>', body
    )
    api = staff_client.get("/api/saves/demo/viewers/npc-pip/buffer?uses=npc-sable").json()
    assert len(lines) == len(api["items"]) == 5
    assert all("the tall one in grey" in line.casefold() for line in lines)
    assert all("npc-sable" in (i["actor_id"], *i["target_ids"]) for i in api["items"])
    assert 'href="/api/saves/demo/viewers/npc-pip/buffer?uses=npc-sable"' in body
    assert "Lines naming <strong>Sable Quint</strong>" in body


# --- one time format, one direction ----------------------------------------------------------


def test_the_time_tags_say_one_format_with_iso_in_the_tooltip() -> None:
    t = Template(
        "{% load inspector %}{% moment a %}|{% span a b %}|{% span a c %}|{% moment d %}|{% moment n 'never' %}|{% moment w %}|{{ a|said }}"
    )
    out = t.render(
        Context(
            {
                "a": "2026-07-06T09:36:00.000Z",
                "b": "2026-07-06T09:55:00.000Z",
                "c": "2026-07-07T01:05:00.000Z",
                "d": "not a time",
                "n": None,
                "w": datetime(2026, 12, 1, 16, 50, 45, tzinfo=UTC),
            }
        )
    )
    nine36 = '<time class="moment" datetime="2026-07-06T09:36:00.000Z" title="2026-07-06T09:36:00.000Z">Jul 6, 9:36 AM</time>'
    assert out.split("|") == [
        nine36,
        f'<span class="span">{nine36} – <time class="moment" datetime="2026-07-06T09:55:00.000Z" title="2026-07-06T09:55:00.000Z">9:55 AM</time></span>',
        f'<span class="span">{nine36} – <time class="moment" datetime="2026-07-07T01:05:00.000Z" title="2026-07-07T01:05:00.000Z">Jul 7, 1:05 AM</time></span>',
        '<span class="moment">not a time</span>',
        '<span class="moment">never</span>',
        '<time class="moment" datetime="2026-12-01T16:50:45+00:00" title="2026-12-01T16:50:45+00:00">Dec 1, 4:50 PM</time>',
        "Jul 6, 9:36 AM",
    ]


def test_viewer_panels_read_oldest_first_with_people_times(staff_client, demo) -> None:
    body = staff_client.get("/saves/demo/viewers/npc-pip/").content.decode()
    sessions = fragment(staff_client, "/saves/demo/viewers/npc-pip/sessions/")
    assert re.findall(r'<li id="episode-(\d+)"', sessions) == ["1", "2", "3"]
    keys = re.findall(r'data-session="([^"]+)"', sessions)
    assert keys == [
        "scene:loc-drowned-lantern",
        "conv-breakfast",
        "conv-standoff",
        "scene:loc-quay",
    ]
    assert (
        '<td class="span-cell"><span class="span"><time class="moment" '
        'datetime="2026-07-06T09:36:00.000Z" title="2026-07-06T09:36:00.000Z">Jul 6, 9:36 AM</time>'
        ' – <time class="moment" datetime="2026-07-06T09:55:00.000Z" '
        'title="2026-07-06T09:55:00.000Z">9:55 AM</time></span></td>' in sessions
    )
    assert not re.search(r">\s*2026-07-06T", sessions)  # no raw ISO shown as text
    gutter = re.findall(r'<a class="line-time"[^>]*><time class="moment" datetime="([^"]+)"', body)
    assert len(gutter) == 19 and gutter == sorted(gutter)
    assert body.count("oldest first") == 3  # the page's note, the buffer, the sessions
    # The JSON twins keep ISO and their own documented order.
    api = staff_client.get("/api/saves/demo/viewers/npc-pip/episodes").json()["items"]
    assert [e["ordinal"] for e in api] == [3, 2, 1] and api[0]["first_at"].endswith("Z")


def test_projection_status_says_the_watermark_as_a_time(staff_client, demo) -> None:
    body = staff_client.get("/saves/demo/").content.decode()
    watermarks = re.findall(r'<td class="watermark"( title="[^"]*")?>(.*?)</td>', body)
    assert len(watermarks) == 4
    for title, cell in watermarks:
        # In words: the time, the memory's id only in the tooltip (issue 28: shards read as
        # uuids).
        assert re.fullmatch(
            r'the memory written at <time class="moment" datetime="\d{4}-\d\d-\d\dT[\d:.]+'
            r'\+00:00" title="[^"]+">[A-Z][a-z]{2} \d{1,2}, \d{1,2}:\d\d [AP]M</time>',
            cell,
        ), cell
        assert title.startswith(' title="the memory written then: ')
    assert not re.search(r"<code>\d{13,}/", body)  # no raw microseconds


def test_a_selected_line_keeps_its_aliases_in_the_window(staff_client, demo, monkeypatch) -> None:
    """The rows a selected line lights up are shown even when the stranger window is full."""
    from memory.web.views import alias_panel

    monkeypatch.setattr(alias_panel, "ALIASES_SHOWN", 1)
    monkeypatch.setattr(alias_panel, "STRANGERS_SHOWN", 0)
    WorldObject.objects.filter(id="npc-pip").update(aliases_json="[]")  # both are strangers now
    body = staff_client.get("/saves/demo/viewers/npc-pip/?line=m-d02-pip").content.decode()
    assert "more entities this viewer has no name for." in body
    assert sorted(
        re.findall(r'<tr id="alias-[^"]+" data-target="([^"]+)" class="selected"', body)
    ) == (sorted([ISOLDE, "npc-tobiah"]))
