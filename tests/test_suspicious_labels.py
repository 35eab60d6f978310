"""Suspicious stored labels called out (issue 28 item 5): an empty or blank label, one over
80 characters, one that is another entity's true name — said on the alias row, the matrix,
the save page and by scan_leaks; never hidden, never changed."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.engine.aliases import label_suspicions, resolve_alias
from memory.engine.knowledge import get_viewer
from memory.engine.leaks import stored
from memory.models import AliasChange, LeakScan, WorldObject
from memory.selectors.labels import SuspiciousLabel, suspicious_labels
from memory.services import set_alias

HX = {"HX-Request": "true"}
LONG = "the man who " + "x" * 69 + "!"  # 82 characters
EMPTY = "empty label: lines print a blank where this person goes"


def test_label_suspicions_in_words() -> None:
    owners = {"Gareth": {"bob"}, "Charlie": {"charlie"}}
    assert label_suspicions(None, "bob", owners) == ()
    assert label_suspicions("the hooded figure", "bob", owners) == ()
    assert label_suspicions("Gareth", "bob", owners) == ()  # the target's own name
    assert label_suspicions("", "bob", owners) == (EMPTY,)
    assert label_suspicions("  \t", "bob", owners) == (EMPTY,)
    assert label_suspicions("x" * 80, "bob", owners) == ()
    assert label_suspicions("x" * 81, "bob", owners) == ("label is 81 characters long (over 80)",)
    assert label_suspicions(" Charlie ", "bob", owners) == (
        "label is the true name of another entity (charlie)",
    )


@pytest.fixture
def odd_labels(cast):
    """alice calls bob "" and charlie by a sentence; charlie calls bob "Alice"."""
    alice = WorldObject.objects.get(id="alice")
    alice.aliases_json = json.dumps([["bob", ""], ["charlie", LONG]])
    alice.save()
    charlie = WorldObject.objects.get(id="charlie")
    charlie.aliases_json = json.dumps([["bob", "Alice"]])
    charlie.save()
    return cast


EXPECTED = [
    SuspiciousLabel("alice", "bob", "", (EMPTY,)),
    SuspiciousLabel("alice", "charlie", LONG, ("label is 82 characters long (over 80)",)),
    SuspiciousLabel(
        "charlie", "bob", "Alice", ("label is the true name of another entity (alice)",)
    ),
]


@pytest.mark.django_db
def test_suspicious_labels_of_the_save(odd_labels) -> None:
    assert suspicious_labels() == EXPECTED
    # Said, never changed: the line still reads as omnia writes it (a blank for bob).
    assert resolve_alias(get_viewer("alice"), "bob") == ""
    assert AliasChange.objects.count() == 0


@pytest.mark.django_db
def test_alias_row_says_what_to_check_and_never_hides_the_person(odd_labels, editor_client) -> None:
    body = editor_client.get("/saves/cast/viewers/alice/aliases/", headers=HX).content.decode()
    assert (
        f'<ul class="warning suspicious" id="alias-check-bob"><li>Check: {EMPTY}</li></ul>'
    ) in body
    assert '<input id="label-bob" name="label" value="" placeholder="[no label]">' in body
    assert (
        '<ul class="warning suspicious" id="alias-check-charlie"><li>Check: label '
        "is 82 characters long (over 80)</li></ul>"
    ) in body


@pytest.mark.django_db
def test_matrix_and_save_page_call_them_out(odd_labels, editor_client) -> None:
    body = editor_client.get("/saves/cast/").content.decode()
    assert (
        '<td class="state-descriptor suspicious" data-viewer="alice" data-target="bob" '
        f'title="descriptor; check: {EMPTY}"><span aria-hidden="true">⚠ </span>[no label]'
        f'<span class="visually-hidden"> (check: {EMPTY})</span></td>'
    ) in body
    assert "3 stored labels worth a second look" in body
    assert (
        '<tr><th scope="row"><a href="/saves/cast/viewers/charlie/aliases/">Charlie</a></th>'
        '<td>Gareth</td><td>“Alice”</td><td class="warning">label is the true name of '
        "another entity (alice)</td></tr>"
    ) in body
    assert '<td>Gareth</td><td><span class="muted">[no label]</span></td>' in body


@pytest.mark.django_db
def test_a_scanned_save_reads_its_labels_from_the_scans(odd_labels) -> None:
    # Kept with each viewer's leak scan, the labels are read from a few scan rows: no alias
    # map of the save is read again (200,000 labels on a 2,000-entity world).
    stored.refresh()
    assert json.loads(LeakScan.objects.get(viewer_id="charlie").labels_json) == [
        ["bob", "Alice", ["label is the true name of another entity (alice)"]]
    ]
    with CaptureQueriesContext(connection) as queries:
        assert suspicious_labels() == EXPECTED
    # The entities' board (their scan rows' kept labels): nobody unscanned to check.
    assert len(queries.captured_queries) == 1
    # A label edited at the door marks its viewer behind: checked afresh until rescanned.
    set_alias("charlie", "bob", "Bob's shadow")
    assert suspicious_labels() == EXPECTED[:2]
    stored.refresh()
    assert suspicious_labels() == EXPECTED[:2]


@pytest.mark.django_db
def test_scan_leaks_counts_them(odd_labels) -> None:
    out = StringIO()
    call_command("scan_leaks", "--viewer", "charlie", stdout=out)
    assert out.getvalue().splitlines()[-2:] == [
        "suspicious labels: 1 (empty, over 80 characters, or another entity's true name)",
        "  charlie -> bob 'Alice': label is the true name of another entity (alice)",
    ]
    err = StringIO()
    call_command("scan_leaks", "--format", "json", stdout=StringIO(), stderr=err)
    assert err.getvalue() == (
        "suspicious labels: 3 (empty, over 80 characters, or another entity's true name)\n"
    )


@pytest.mark.django_db
def test_no_suspicious_label_no_line(cast) -> None:
    assert suspicious_labels() == []
    out = StringIO()
    call_command("scan_leaks", stdout=out)
    assert "suspicious" not in out.getvalue()
