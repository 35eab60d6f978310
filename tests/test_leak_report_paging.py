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


def test_only_the_page_is_read_whole(leaky):
    """The occurrences and contexts of the findings past the page are never read: the only
    statements naming occurrences_json read the page's rows by their keys."""
    from memory.selectors.leaks import leak_findings_page

    with CaptureQueriesContext(connection) as captured:
        page, total, _viewers = leak_findings_page(0, 25)
    assert (len(page), total > 100) == (25, True)
    whole_reads = [q["sql"] for q in captured.captured_queries if "occurrences_json" in q["sql"]]
    assert len(whole_reads) == 1 and '"id" IN (' in whole_reads[0], whole_reads


def test_the_viewer_options_are_what_the_template_loop_printed():
    """markup.viewer_options against the loop it replaced, byte for byte, hostile names in."""
    from django.template import Context, Template

    from memory.web.views.markup import viewer_options

    loop = Template(
        "{% for id, name in viewers %}<option value=\"{{ id }}\"{% if id == filters.viewer %}"
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
