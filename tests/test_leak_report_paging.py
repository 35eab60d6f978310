"""The leak report's page (memory.selectors.leaks.leak_findings_page): the findings of the
whole report (leak_findings, which the exports and the API read) sliced, exactly, in every
order and under every filter, with the viewers behind scanned afresh among them; yet only the
page's findings are read whole."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.worlds.synthetic import Shape, generate_omnia_world

# Every moment in three names somebody by a true name: each witness but the one named leaks.
SHAPE = Shape.named("uuid-head", rows=1500, entities=30, hot_rows=300, leaks=0.35)


@pytest.fixture
def leaky(db, tmp_path):
    from memory.active_save import use
    from memory.models import LeakFinding, Save

    generate_omnia_world(tmp_path / "leaky.sqlite", SHAPE)
    call_command("import_omnia", str(tmp_path / "leaky.sqlite"), "--fold", verbosity=0)
    with use(Save.objects.get(name="leaky")):
        assert LeakFinding.objects.count() > 150  # a report of several pages
        yield


FILTERS = [
    {},
    {"kind": "unknown_name"},
    {"state": "open"},
    {"state": "accepted"},
    {"world_id": "harbour-world"},
]


@pytest.mark.parametrize("sort", [None, "viewer", "world", "kind", "count", "text", "state"])
def test_every_page_is_the_report_sliced(leaky, sort):
    from memory.models import LeakFinding, LeakScan
    from memory.selectors.leaks import leak_findings, leak_findings_page
    from memory.services import accept_leak

    # Some accepted (the state filter and order), one viewer behind (scanned for the page).
    for row in LeakFinding.objects.order_by("viewer_id", "ordinal")[:40:7]:
        accept_leak(row.viewer_id, row.section, row.kind, row.text, "expected")
    behind = LeakFinding.objects.order_by("-viewer_id").values_list("viewer_id", flat=True)[0]
    LeakScan.objects.filter(viewer_id=behind).update(stale=True)
    for filters in FILTERS:
        whole = leak_findings(sort=sort, **filters)
        viewers = {f["viewer_id"]: f["viewer_name"] for f in whole}
        for start in (0, 60, max(len(whole) - 10, 0), len(whole) + 5):
            page, total, found = leak_findings_page(start, 60, sort=sort, **filters)
            assert (page, total, found) == (whole[start : start + 60], len(whole), viewers)
    assert any(f["viewer_id"] == behind for f in leak_findings(sort=sort))


@pytest.mark.parametrize("sort", [None, "text"])
def test_only_the_page_is_read_whole(leaky, sort):
    """The occurrences and contexts of the findings past the page are never read: in the
    default order (by viewer) only the findings of the few viewers the page spans, found by
    the scan rows' counts; in another order the page's rows by their keys."""
    import re

    from memory.selectors.leaks import leak_findings_page

    with CaptureQueriesContext(connection) as captured:
        page, total, _viewers = leak_findings_page(0, 25, sort=sort)
    assert (len(page), total > 100) == (25, True)
    whole_reads = [q["sql"] for q in captured.captured_queries if "occurrences_json" in q["sql"]]
    assert len(whole_reads) == 1, whole_reads
    # (An IN list, or on PostgreSQL an array where active_save.among wrote the statement.)
    keys = re.search(
        r'"?\b(viewer_id|id)"? (?:IN \((?P<listed>[^)]*)\)|= ANY\((?P<array>[^)]*)\))',
        whole_reads[0],
    )
    assert keys is not None, whole_reads[0]
    asked = (keys.group("listed") or keys.group("array")).split(",")
    if sort is None:
        assert keys.group(1) == "viewer_id"
        assert len(asked) <= len({f["viewer_id"] for f in page})
    else:
        assert (keys.group(1), len(asked)) == ("id", 25)


def test_the_viewer_options_are_what_the_template_loop_printed():
    """markup.viewer_options against the loop it replaced, byte for byte, hostile names in."""
    from django.template import Context, Template

    from memory.web.views.markup import viewer_options

    loop = Template(
        '{% for id, name in viewers %}<option value="{{ id }}"{% if id == filters.viewer %}'
        " selected{% endif %}>{{ name }}{% if name != id %} ({{ id }}){% endif %}</option>"
        "{% endfor %}"
    )
    choices = [
        ("bob", "Bob"),
        ("v-1", "v-1"),
        ('x"><script>alert(1)</script>', "<b>O'Hara & Sons</b>"),
        ("émile", "Émile \u202e"),
    ]
    for selected in (None, "bob", 'x"><script>alert(1)</script>', "nobody"):
        old = loop.render(Context({"viewers": choices, "filters": {"viewer": selected}}))
        assert viewer_options(choices, selected) == old


def _open_counts_by_every_finding(viewer_id=None):
    """What open_counts counted before each scan row kept its counts: every finding."""
    from collections import Counter

    from memory.active_save import scoped_cursor

    who = "(o.is_agent IS NULL OR o.is_agent <> 0)" if viewer_id is None else "o.id = %s"
    sql = (
        "SELECT f.viewer_id, f.kind, COUNT(*) FROM memory_leak_findings f "
        "WHERE f.game_save_id = %(save)s AND EXISTS (SELECT 1 FROM memory_leak_scans s "
        "WHERE s.game_save_id = f.game_save_id AND s.viewer_id = f.viewer_id AND NOT s.stale) "
        "AND EXISTS (SELECT 1 FROM objects o WHERE o.game_save_id = f.game_save_id "
        f"AND o.id = f.viewer_id AND o.type = %s AND {who}) "
        "AND NOT EXISTS (SELECT 1 FROM memory_leak_acceptances a WHERE a.game_save_id = "
        "f.game_save_id AND a.viewer_id = f.viewer_id AND a.section = f.section "
        "AND a.kind = f.kind AND a.text = f.text) GROUP BY f.viewer_id, f.kind"
    )
    counts = {}
    with scoped_cursor() as cursor:
        cursor.execute(sql, ["entity", *([] if viewer_id is None else [viewer_id])])
        for viewer, kind, n in cursor.fetchall():
            counts.setdefault(viewer, Counter())[kind] = n
    return counts


def test_open_counts_from_the_scan_rows_are_every_finding_counted(leaky):
    """The scan rows' counts less the accepted findings are what counting every open finding
    gives: with acceptances (every finding of one viewer among them), a viewer behind, a
    viewer that is no agent, an acceptance whose finding is gone, and after a rescan."""
    from memory.engine.leaks.standing import open_counts
    from memory.engine.leaks.stored import refresh
    from memory.models import LeakAcceptance, LeakFinding, LeakScan, WorldObject
    from memory.services import accept_leak

    viewers = list(
        LeakFinding.objects.order_by("viewer_id").values_list("viewer_id", flat=True).distinct()
    )
    for row in LeakFinding.objects.filter(viewer_id=viewers[0]):
        accept_leak(row.viewer_id, row.section, row.kind, row.text, "all of them")
    others = LeakFinding.objects.exclude(viewer_id=viewers[0]).order_by("viewer_id", "ordinal")
    for row in others[5::9]:
        accept_leak(row.viewer_id, row.section, row.kind, row.text, "this one")
    LeakAcceptance.objects.create(
        viewer_id=viewers[1], section="Recent memories", kind="unknown_name", text="Nobody"
    )
    LeakScan.objects.filter(viewer_id=viewers[2]).update(stale=True)
    WorldObject.objects.filter(id=viewers[3]).update(is_agent=0)
    assert open_counts() == _open_counts_by_every_finding()
    assert viewers[0] not in open_counts() and viewers[2] not in open_counts()
    for viewer in viewers[:5]:
        assert open_counts(viewer) == _open_counts_by_every_finding(viewer)
    refresh()  # the stale one rescanned: its counts written with its findings
    assert open_counts() == _open_counts_by_every_finding()
    assert viewers[2] in open_counts()


def test_a_scan_row_whose_counts_are_unreadable_is_counted_from_its_findings(leaky, staff_client):
    """A scan row's counts edited by hand into something else (not JSON, a list, a count
    that is no number): its findings are counted instead, and the pages that show the counts
    answer as before (never a 500)."""
    from memory.engine.leaks.standing import open_counts
    from memory.models import LeakScan

    expected = _open_counts_by_every_finding()
    viewers = sorted(expected)[:4]
    texts = ["{not json", "[1, 2]", '{"unknown_name": "<b>"}', "7"]
    for viewer, text in zip(viewers, texts, strict=True):
        LeakScan.objects.filter(viewer_id=viewer).update(kinds_json=text)
    assert open_counts() == expected
    for url in ["/saves/leaky/", "/saves/leaky/leaks/", "/triage/", "/"]:
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert b"<b>" not in response.content


def _every_word_checking_each(saves):
    """The word facet's counts as the queue's filters count them: each finding's scan checked."""
    from django.db.models import Count

    from memory.selectors import triage

    rows = triage._findings(triage.QueueFilters(), saves, without="word")
    counts: dict[str, int] = {}
    for row in rows.values("text").annotate(n=Count("*")).order_by():
        counts[row["text"].casefold()] = counts.get(row["text"].casefold(), 0) + row["n"]
    return counts


def _queue_of_every_state(first: int, step: int) -> tuple[list, list[str]]:
    """Findings of every state a queue lists: every `step`th (from `first`) accepted, the
    second viewer's scan stale (behind), the third viewer no agent. Returns the accepted
    findings and the viewers with findings, by id."""
    from memory.models import LeakFinding, LeakScan, WorldObject
    from memory.services import accept_leak

    rows = list(LeakFinding.objects.order_by("viewer_id", "ordinal")[first::step])
    for row in rows:
        accept_leak(row.viewer_id, row.section, row.kind, row.text, "fine")
    viewers = sorted({r.viewer_id for r in LeakFinding.objects.all()})
    LeakScan.objects.filter(viewer_id=viewers[1]).update(stale=True)
    WorldObject.objects.filter(id=viewers[2]).update(is_agent=0)
    return rows, viewers


def test_the_triage_counts_from_the_scan_rows_are_every_finding_counted(
    leaky, tmp_path, monkeypatch
):
    """The triage queue without a word filter counts its totals and its save, viewer, kind
    and state facets from the scan rows, and its word facet from every finding less those
    of the viewers behind: the same page as counting the findings, over two saves, with
    acceptances, a viewer behind and one that is no agent, under every filter."""
    from memory.models import Save
    from memory.selectors import triage, triage_facets

    generate_omnia_world(tmp_path / "second.sqlite", Shape.named("uuid-head", rows=600,
                         entities=12, hot_rows=90, leaks=0.5, seed=5))  # fmt: skip
    call_command("import_omnia", str(tmp_path / "second.sqlite"), "--fold", verbosity=0)
    rows, viewers = _queue_of_every_state(3, 8)
    saves = [s.name for s in Save.objects.live()]
    assert len(saves) == 2
    cases = [
        {},
        {"save": saves[1]},
        {"viewer": viewers[0]},
        {"viewer": rows[0].viewer_id, "state": "accepted"},
        {"kind": "unknown_name"},
        {"state": "open"},
        {"state": "accepted", "save": saves[0]},
        {"kind": "system_id"},
        {"save": saves[0], "kind": "unknown_name", "state": "open"},
        {"save": saves[1], "viewer": viewers[0], "kind": "unknown_name"},
        {"viewer": viewers[3], "kind": "system_id", "state": "accepted"},
    ]
    for given in cases:
        filters = triage.QueueFilters(**given)
        counted = triage.queue(filters)
        with monkeypatch.context() as m:
            m.setattr(triage_facets, "count_facets", lambda *a: {})  # every count by the findings
            m.setattr(triage_facets, "every_word", _every_word_checking_each)
            by_findings = triage.queue(filters)
        assert counted == by_findings, given
    assert triage.queue(triage.QueueFilters()).total > 100


def test_the_triage_queue_opens_on_the_rows_its_filters_give(leaky):
    """The unfiltered queue's pages, read raw, are the queryset's rows in its order, each with
    its state, page after page by the cursor: with acceptances, a viewer behind (left out)
    and one that is no agent (kept: the queue lists every stored finding)."""
    from memory.engine.saves import live_saves
    from memory.selectors import triage

    _rows, viewers = _queue_of_every_state(2, 7)
    saves = {s.pk: s for s in live_saves()}
    ordered = triage._findings(triage.QueueFilters(), saves, with_state=True).order_by(
        "game_save_id", "viewer_id", "ordinal"
    )
    expected = [(f.pk, f.viewer_id, f.text, f.count, f.likely_description, f.accepted)
                for f in ordered]  # fmt: skip
    assert any(e[-1] for e in expected) and not any(e[1] == viewers[1] for e in expected)
    walked, cursor = [], None
    while True:
        page = triage.queue(triage.QueueFilters(), cursor=cursor, limit=17)
        walked += [(i["viewer_id"], i["text"], i["count"], i["state"]) for i in page.items]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert walked == [
        (v, text, n, "accepted" if accepted else "open")
        for _pk, v, text, n, _likely, accepted in expected
    ]
    raw = triage._unfiltered_page(saves, None, len(expected) + 1)
    assert [(f.pk, f.viewer_id, f.text, f.count, f.likely_description, f.accepted)
            for f in raw] == expected  # fmt: skip


def test_verify_compares_the_scan_rows_counts_with_the_findings(leaky):
    """A scan row whose counts by kind no longer say what is stored beside it (a hand edit) is
    drift: `rebuild_projections --verify` names the viewer, the counts and the findings'."""
    from memory.engine.leaks.stored import verify
    from memory.models import LeakFinding, LeakScan

    assert verify().drift == []
    viewer = LeakFinding.objects.order_by("viewer_id").values_list("viewer_id", flat=True)[0]
    kinds = {}
    for kind in LeakFinding.objects.filter(viewer_id=viewer).values_list("kind", flat=True):
        kinds[kind] = kinds.get(kind, 0) + 1
    LeakScan.objects.filter(viewer_id=viewer).update(kinds_json='{"unknown_name": 999}')
    assert verify().drift == [
        {"viewer_id": viewer, "counted": {"unknown_name": 999}, "stored": kinds}
    ]
