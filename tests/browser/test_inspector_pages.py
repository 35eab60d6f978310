"""The inspector as designers want it (issue 15 items 1-4), on the demo world in Chromium:
names before ids, the buffer as the main column with the panels beside it and nothing
clipped, panel URLs that land on their panel, linked panels, one time format, axe clean."""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from memory.models import WorldObject

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ISOLDE = "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"  # the demo's customs inspector, Isolde Varga
# "Jul 6, 9:36 AM": how every page says a time to people.
SAID = re.compile(r"[A-Z][a-z]{2} \d{1,2}, \d{1,2}:\d{2} [AP]M")
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


# Every page this test file owns, with the states worth seeing (QA on, a line selected,
# shadowed faces shown, each panel's own URL).
PAGES = {
    "overview": "/",
    "viewer": "/saves/demo/viewers/npc-pip/",
    "viewer-isolde": f"/saves/demo/viewers/{ISOLDE}/",
    "viewer-qa": "/saves/demo/viewers/npc-tobiah/buffer/?qa=1",
    "viewer-line": "/saves/demo/viewers/npc-pip/?line=m-a05-pip",
    "viewer-aliases": "/saves/demo/viewers/npc-pip/aliases/",
    "viewer-sessions": "/saves/demo/viewers/npc-pip/sessions/",
    "viewer-faces": "/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1",
    "viewer-uses": "/saves/demo/viewers/npc-pip/buffer/?uses=npc-sable",
    "prompt": "/saves/demo/viewers/npc-pip/prompt/",
}

# Tables (and the panels holding them) wider than they are shown: content cut or scrolled.
CLIPPED_TABLES = """() => [...document.querySelectorAll('table')].flatMap(t => {
  const holders = [t, t.closest('.panel'), t.closest('.scroll')].filter(Boolean);
  return holders.filter(h => h.scrollWidth > h.clientWidth + 1)
    .map(h => `${t.className || t.id}: ${h.className} ${h.scrollWidth} > ${h.clientWidth}`);
})"""
CLIPPED_PANELS = """() => [...document.querySelectorAll('.panel')]
  .filter(p => p.scrollWidth > p.clientWidth + 1)
  .map(p => `${p.id || p.className}: ${p.scrollWidth} > ${p.clientWidth}`)"""
WIDER_THAN_THE_SCREEN = (
    "() => document.scrollingElement.scrollWidth > document.scrollingElement.clientWidth + 1"
)


def serious_violations(page) -> list[str]:
    """axe's serious and critical findings on the page as it stands, each with its first
    targets: a page test asserts there are none."""
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in Axe().run(page).response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


# --- 1. names first ------------------------------------------------------------------------


def test_names_come_first_and_ids_stay_as_hints(login, page, demo, screenshots) -> None:
    WorldObject.objects.create(id="crate-7", type="entity", world_id="harbor-town", is_agent=0)
    login(page, "/")
    page.goto("/saves/demo/")  # the save's page lists its viewers and draws its matrix
    viewers = page.locator("#viewer-list ul.viewer-list").first
    assert viewers.locator("li a").all_inner_texts() == [
        "Isolde Varga",
        "Maren Holloway",
        "Oswin Marl",
        "Pip Dunn",
        "Sable Quint",
        "Tobiah Crane",
    ]
    assert viewers.locator("li").first.locator("code.id-hint").inner_text() == ISOLDE
    # A non-agent is listed apart, not as a viewer.
    assert page.locator("#viewer-list ul.non-agents li a").all_inner_texts() == ["crate-7"]
    heads = page.locator("table.matrix thead th[data-target]")
    assert heads.first.inner_text().split("\n")[0] == "Isolde Varga"
    assert page.locator("table.matrix tbody th a").all_inner_texts()[:2] == [
        "Isolde Varga",
        "Maren Holloway",
    ]
    screenshots("overview-names")

    page.goto(f"/saves/demo/viewers/{ISOLDE}/")
    assert page.locator("h1 .viewer-name").inner_text() == "Isolde Varga"
    assert page.locator("h1 .id-hint").inner_text() == ISOLDE
    assert page.title().startswith("Isolde Varga — ")
    current = page.locator("nav.viewer-switch a[aria-current=page]")
    assert current.inner_text().split("\n")[0] == "Isolde Varga"
    alias_who = page.locator("#alias-npc-tobiah th").inner_text()
    assert alias_who.split("\n")[:2] == ["Tobiah Crane", "npc-tobiah"]
    # QA mode still shows the raw ids of every line.
    page.goto(f"/saves/demo/viewers/{ISOLDE}/buffer/?qa=1")
    assert page.locator("#buffer-panel .qa-ids").first.inner_text().startswith("id ")

    page.goto("/saves/demo/viewers/npc-pip/prompt/")
    assert page.locator("h1").inner_text() == "Prompt context of Pip Dunn npc-pip"
    assert page.console_errors == []


def test_a_search_with_one_match_opens_that_viewer(login, page, demo) -> None:
    login(page, "/")
    page.fill("#viewer-search", "Isolde")
    page.press("#viewer-search", "Enter")
    page.wait_for_url(re.compile(rf"/saves/demo/viewers/{ISOLDE}/$"))
    assert page.locator("h1 .viewer-name").inner_text() == "Isolde Varga"
    page.goto("/saves/demo/?q=npc-")  # five matches: the list, not a jump
    assert page.locator("#viewer-list ul.viewer-list li a").count() == 5
    # Typing narrows the overview's list in place, without jumping away.
    page.fill("#overview-q", "Tobiah")
    expect(page.locator("#viewer-list ul.viewer-list li a")).to_have_count(1)
    assert page.url.endswith("/?q=Tobiah")
    page.press("#overview-q", "Enter")
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-tobiah/$"))
    assert page.console_errors == []


# --- 2. side by side, nothing clipped, panel URLs focus their panel --------------------------


@pytest.mark.parametrize("width", [1280, 1440, 1920])
def test_buffer_is_the_main_column_with_panels_beside_it(login, page, demo, width) -> None:
    login(page, "/")
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto("/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1")
    buffer = box(page, "#buffer-panel")
    for side in ("#aliases-panel", "#sessions-panel", "#faces-panel"):
        panel = box(page, side)
        assert panel["x"] >= buffer["x"] + buffer["width"], side  # beside, not below
        assert panel["width"] < buffer["width"] + 1, side  # the buffer is the wide one
    assert page.evaluate(CLIPPED_PANELS) == []
    assert page.evaluate(CLIPPED_TABLES) == []


def test_one_readable_column_and_a_compact_header_at_390(login, page, demo, screenshots) -> None:
    login(page, "/")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/saves/demo/viewers/npc-pip/")
    assert box(page, ".site-header")["height"] <= 90
    xs = {round(box(page, f"#{p}")["x"]) for p in ("buffer-panel", "aliases-panel", "faces-panel")}
    assert len(xs) == 1  # one column
    assert box(page, "#buffer-panel")["y"] < box(page, "#aliases-panel")["y"]  # buffer first
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate(CLIPPED_PANELS) == []


@pytest.mark.parametrize("panel", ["aliases", "buffer", "sessions", "faces"])
def test_a_panel_url_focuses_and_highlights_its_panel(login, page, demo, panel) -> None:
    login(page, "/")
    page.set_viewport_size({"width": 390, "height": 700})  # panels stacked: scrolling shows
    page.goto(f"/saves/demo/viewers/npc-tobiah/{panel}/")
    section = page.locator(f"#{panel}-panel")
    assert "focused" in section.get_attribute("class")
    assert section.get_attribute("aria-current") == "true"
    expect(section).to_be_focused()
    top = section.evaluate("s => s.getBoundingClientRect().top")
    assert -2 < top < 700 - 100, top  # scrolled into view (the last panel may not reach the top)
    assert page.locator(".panel.focused").count() == 1
    page.goto("/saves/demo/viewers/npc-tobiah/")  # the page itself focuses no panel
    assert page.locator(".panel.focused").count() == 0


def test_overview_tables_fit_and_the_watermark_reads_as_a_time(login, page, demo) -> None:
    login(page, "/")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto("/saves/demo/")
    assert page.locator("table.matrix thead th[data-target]").count() == 6
    assert page.evaluate(CLIPPED_TABLES) == []
    watermark = page.locator("table.shards td.watermark time").first
    assert SAID.fullmatch(watermark.inner_text())
    assert ISO.match(watermark.get_attribute("datetime"))
    assert not re.search(r"\d{13,}", page.locator("table.shards").inner_text())


# --- 3. linked panels -----------------------------------------------------------------------


def _standoff_line(page):
    return page.locator("#buffer-panel .buffer-line", has_text="Open this crate, sailor")


def test_selecting_a_line_lights_its_session_episode_and_aliases(login, page, demo) -> None:
    login(page, "/")
    page.goto("/saves/demo/viewers/npc-pip/")
    page.evaluate("window.__noReload = 1")
    line = _standoff_line(page)
    entry_id = line.get_attribute("data-entry-id")
    line.locator("a.line-time").click()
    page.wait_for_url(re.compile(rf"/saves/demo/viewers/npc-pip/\?line={entry_id}"))
    page.wait_for_selector(f"#buffer-panel .buffer-line.selected[data-entry-id='{entry_id}']")
    assert page.evaluate("window.__noReload") == 1  # htmx swapped the panels
    expect(page.locator("#buffer-panel .buffer-line.selected")).to_be_focused()
    assert page.locator("#sessions-panel tr.selected").get_attribute("data-session") == (
        "conv-standoff"
    )
    assert page.locator("#sessions-panel .episodes li.selected").get_attribute("id") == (
        "episode-3"
    )
    assert page.locator("#sessions-panel rect.episode.selected").count() == 1
    selected = page.locator("#aliases-panel tr.selected")
    assert sorted(selected.evaluate_all("rows => rows.map(r => r.dataset.target)")) == sorted(
        [ISOLDE, "npc-tobiah"]
    )
    assert page.console_errors == []


def test_linked_panels_work_without_javascript(login, browser, live_server, demo) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    page = context.new_page()
    login(page, "/")
    page.goto("/saves/demo/viewers/npc-pip/")
    _standoff_line(page).locator("a.line-time").click()
    page.wait_for_url(re.compile(r"\?line="))
    assert page.locator("#sessions-panel tr.selected").get_attribute("data-session") == (
        "conv-standoff"
    )
    assert page.locator("#aliases-panel tr.selected").count() == 2
    page.locator("#alias-npc-sable a.uses-link").click()
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/buffer/\?uses=npc-sable$"))
    lines = page.locator("#buffer-panel .buffer-line .line").all_inner_texts()
    assert lines and all("the tall one in grey" in t.casefold() for t in lines)
    context.close()


def test_an_alias_row_shows_the_lines_that_use_it(login, page, demo) -> None:
    login(page, "/")
    page.goto("/saves/demo/viewers/npc-pip/")
    every = page.locator("#buffer-panel .buffer-line").count()
    page.evaluate("window.__noReload = 1")
    page.locator("#alias-npc-sable a.uses-link").click()
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/buffer/\?uses=npc-sable$"))
    page.wait_for_selector("#buffer-panel .uses-filter")
    assert page.evaluate("window.__noReload") == 1
    expect(page.locator("#buffer-panel")).to_be_focused()  # the panel it opened, in focus
    # omnia's reading, as the twin's `line` (a line omnia renders wrongly also carries the
    # corrected one, hidden until the reading toggle asks for it: issue 30)
    lines = page.locator("#buffer-panel .buffer-line .line:not(.line-corrected)").all_inner_texts()
    assert 0 < len(lines) < every
    assert all("the tall one in grey" in t.casefold() for t in lines)
    assert "Lines naming Sable Quint" in page.locator("#buffer-panel .uses-filter").inner_text()
    # The JSON twin answers the same lines.
    twin = page.locator("#buffer-panel a.twin").get_attribute("href")
    assert "uses=npc-sable" in twin
    data = page.request.get(twin).json()
    assert [i["line"] for i in data["items"]] == lines
    page.locator("#buffer-panel .uses-filter a").click()
    expect(page.locator("#buffer-panel .buffer-line")).to_have_count(every)


# --- 4. one time format, one direction --------------------------------------------------------


def test_times_read_one_way_with_iso_beside_and_one_direction(login, page, demo) -> None:
    login(page, "/")
    page.goto("/saves/demo/viewers/npc-pip/")
    gutter = page.locator("#buffer-panel .buffer-line .line-time time")
    assert gutter.count() == page.locator("#buffer-panel .buffer-line").count()
    for t in gutter.all():
        assert SAID.fullmatch(t.inner_text()), t.inner_text()
        assert ISO.match(t.get_attribute("datetime")) and t.get_attribute("title")
    stamps = gutter.evaluate_all("ts => ts.map(t => t.getAttribute('datetime'))")
    assert stamps == sorted(stamps)  # oldest first
    episodes = page.locator("#sessions-panel .episodes li")
    ordinals = episodes.evaluate_all("lis => lis.map(li => +li.id.split('-')[1])")
    assert ordinals == sorted(ordinals) and len(ordinals) == 3  # oldest first, like the buffer
    firsts = page.locator("#sessions-panel .episodes li time:first-of-type").evaluate_all(
        "ts => ts.map(t => t.getAttribute('datetime'))"
    )
    assert firsts == sorted(firsts)
    for h in ("#buffer-title", "#sessions-title"):
        assert "oldest first" in page.locator(h).inner_text()
    spans = page.locator("#sessions-panel td.span-cell")
    assert spans.count() == 4
    for cell in spans.all():
        text = cell.inner_text()
        assert SAID.match(text) and "T" not in text.replace("Jul", ""), text
        lines = cell.evaluate(
            "c => Math.round(c.querySelector('.span, .moment').getBoundingClientRect().height"
            " / parseFloat(getComputedStyle(c).lineHeight))"
        )
        assert lines <= 2, text
    # The JSON twin (the panel's own link, under the same save) keeps ISO.
    twin = page.locator("#buffer-title a.twin").get_attribute("href")
    assert twin.startswith("/api/saves/demo/viewers/npc-pip/buffer"), twin
    api = page.request.get(twin).json()
    assert all(ISO.match(i["timestamp"]) for i in api["items"])
    # The other times on the pages read the same way: an alias change in the history, when
    # the save was imported (its page and the overview).
    page.fill("#label-npc-sable", "the chandler")
    page.click("#alias-npc-sable button[value=set]")
    page.wait_for_selector("#aliases-panel .alias-history time")
    for path, selector in (
        (None, "#aliases-panel .alias-history time"),
        ("/saves/demo/", ".provenance-list time"),
        ("/", ".save-section time"),
    ):
        if path:
            page.goto(path)
        # The save's provenance is folded (issue 28 item 7): opened to be read.
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        times = page.locator(selector)
        assert times.count() >= 1, selector
        for t in times.all():
            assert SAID.fullmatch(t.inner_text()), (selector, t.inner_text())
            assert ISO.match(t.get_attribute("datetime")) and t.get_attribute("title")


# --- axe, table widths and screenshots of every page ----------------------------------------


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_is_axe_clean_unclipped_and_shot(login, page, demo, screenshots, name) -> None:
    login(page, "/")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(PAGES[name])
    assert serious_violations(page) == []
    assert page.evaluate(CLIPPED_TABLES) == []
    screenshots(f"page-{name}")
    assert page.console_errors == []


def test_the_table_check_fails_on_a_clipped_table(login, page, demo) -> None:
    """The width check is not vacuous: a table forced wider than its panel is reported."""
    login(page, "/")
    page.goto("/saves/demo/viewers/npc-pip/")
    page.evaluate(
        "document.querySelector('#sessions-panel table').style.minWidth = '3000px';"
        "document.querySelector('#sessions-panel table').style.tableLayout = 'auto'"
    )
    assert any(c.startswith("sessions") for c in page.evaluate(CLIPPED_TABLES))
