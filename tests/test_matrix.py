"""The overview's knowledge matrix as a window: paged and filtered by the user, every query
bounded by what is shown, never by the world (2,000 entities would be four million cells)."""

from __future__ import annotations

import json

import pytest

from memory.models import Attribute, WorldObject
from memory.selectors.matrix import MATRIX_COLS, MATRIX_ROWS, matrix_window


@pytest.fixture
def crowd(cast):
    """The tavern cast plus 60 sailors; sailor-07 knows alice by her name."""
    for n in range(60):
        WorldObject.objects.create(
            id=f"sailor-{n:02d}",
            type="entity",
            world_id=cast.world.id,
            aliases_json=json.dumps([["alice", "Alice"]] if n == 7 else []),
        )
        Attribute.objects.create(
            object_id=f"sailor-{n:02d}", name="name", value=f"Sailor {n}", visibility="PUBLIC"
        )
    return cast


def test_matrix_window_pages_rows_and_columns(crowd, django_assert_num_queries):
    with django_assert_num_queries(5):  # both axes counted at once, windows, names, labels
        window = matrix_window(crowd.world)
    assert (window.entities, window.viewer_total, window.target_total) == (63, 63, 63)
    assert [v.id for v in window.viewers] == ["alice", "bob", "charlie"] + [
        f"sailor-{n:02d}" for n in range(MATRIX_ROWS - 3)
    ]
    assert [t.id for t in window.targets][:3] == ["alice", "bob", "charlie"]
    assert len(window.targets) == MATRIX_COLS
    assert window.cells["alice"]["bob"].label == "the hooded figure"
    assert window.cells["alice"]["bob"].state == "descriptor"
    assert window.cells["sailor-07"]["alice"].state == "known"
    assert "alice" not in window.cells["alice"]  # no self cell
    assert window.row_page == {"prev": None, "next": MATRIX_ROWS, "first": 1, "last": MATRIX_ROWS}

    later = matrix_window(crowd.world, row_start=50, col_start=60)
    assert [v.id for v in later.viewers] == [f"sailor-{n:02d}" for n in range(47, 60)]
    assert [t.id for t in later.targets] == ["sailor-57", "sailor-58", "sailor-59"]
    assert later.row_page == {"prev": 25, "next": None, "first": 51, "last": 63}


def test_matrix_window_filters_by_id_or_name_and_stays_bounded(crowd, django_assert_num_queries):
    with django_assert_num_queries(6):  # plus the world's entity count, since a filter is set
        window = matrix_window(crowd.world, row_q="sailor 7", col_q="gareth")
    assert window.entities == 63
    assert [v.id for v in window.viewers] == ["sailor-07"]
    assert [t.id for t in window.targets] == ["bob"]  # Gareth is bob's (private) true name
    for n in range(60, 400):
        WorldObject.objects.create(id=f"sailor-{n:03d}", type="entity", world_id=crowd.world.id)
    with django_assert_num_queries(4):
        bigger = matrix_window(crowd.world, row_start=100)
    assert bigger.entities == 403
    assert len(bigger.viewers) == MATRIX_ROWS
    # The same filter on both axes: counted at once too.
    WorldObject.objects.filter(id="sailor-100").update(is_agent=0)
    with django_assert_num_queries(5):  # the counts, the world's entities, windows, names
        same = matrix_window(crowd.world, row_q="sailor-1", col_q="sailor-1")
    assert (same.viewer_total, same.target_total) == (109, 110)  # sailor-1x, sailor-1xx


def test_the_leak_board_counts_each_worlds_entities_for_the_matrix(
    crowd, django_assert_num_queries
):
    """The save page's board holds every entity: its counts per world are the matrix's totals,
    and a window given them reads no count of its own."""
    from memory.engine.leaks.standing import read_board

    WorldObject.objects.filter(id="sailor-03").update(is_agent=0)
    WorldObject.objects.create(id="gull", type="entity", world_id=None)
    counts = read_board().world_counts
    assert counts == {crowd.world.id: (63, 62), None: (1, 1)}
    with django_assert_num_queries(4):  # windows, names, labels
        window = matrix_window(crowd.world, counted=counts[crowd.world.id])
    counted = matrix_window(crowd.world)
    assert (window.entities, window.viewer_total, window.target_total) == (63, 62, 63)
    assert (counted.entities, counted.viewer_total, counted.target_total) == (63, 62, 63)
    assert [v.id for v in window.viewers] == [v.id for v in counted.viewers]
    assert window.cells == counted.cells
    # A filter counts what it matches, whatever the board says.
    filtered = matrix_window(crowd.world, row_q="sailor 7", counted=counts[crowd.world.id])
    assert (filtered.viewer_total, filtered.target_total) == (1, 63)


def test_overview_draws_a_window_with_links_to_the_next(client, crowd, django_user_model):
    client.force_login(django_user_model.objects.create_user("ann", password="pw"))
    body = client.get("/saves/cast/").content.decode()
    assert "Viewers 1–25 of 63" in body
    # 50 viewers scanned afresh for the page, 13 left to the next cycle; no zero rows listed
    assert "No leak in the prompt of any of the 50 viewers scanned." in body
    assert "13 viewers not scanned since their memories or world changed" in body
    assert "50 of 63 shown: search to narrow" in body
    assert 'href="/saves/cast/?mw=tavern&amp;mr=25&amp;mc=0#matrix-tavern"' in body
    body = client.get("/saves/cast/?mw=tavern&mr=25&mrq=sailor").content.decode()
    assert "Viewers 26–50 of 60" in body
    assert 'data-viewer="sailor-25" data-target="alice"' in body
    assert 'data-viewer="sailor-24" data-target=' not in body
    body = client.get(
        "/saves/cast/?mw=tavern&mr=x&mc=-3"
    ).content.decode()  # junk offsets: the start
    assert "Viewers 1–25 of 63" in body


OLD_MATRIX_ROW = (
    "<tr>\n"
    '        <th scope="row"><a href="{{ url }}">{{ viewer_name }}</a>{% if viewer_name != '
    'viewer_id %} <code class="id-hint">{{ viewer_id }}</code>{% endif %}</th>\n'
    "        {% for target, cell in cells %}\n"
    "          {% if cell.suspicions %}\n"
    '          <td class="state-{{ cell.state }} suspicious" data-viewer="{{ viewer_id }}" '
    'data-target="{{ target.id }}" title="{{ cell.state }}; check: {{ cell.suspicions|join:"; " }}">'
    '<span aria-hidden="true">⚠ </span>{% if cell.label.strip %}{{ cell.label }}{% else %}'
    '[no label]{% endif %}<span class="visually-hidden"> (check: '
    '{{ cell.suspicions|join:"; " }})</span></td>\n'
    "          {% elif cell %}\n"
    '          <td class="state-{{ cell.state }}" data-viewer="{{ viewer_id }}" '
    'data-target="{{ target.id }}" title="{{ cell.state }}">{% if cell.label is not None %}'
    "{{ cell.label }}{% else %}—{% endif %}</td>\n"
    "          {% else %}\n"
    '          <td class="self" aria-label="self">·</td>\n'
    "          {% endif %}\n"
    "        {% endfor %}\n"
    "      </tr>"
)


@pytest.mark.parametrize("named", [True, False])
def test_matrix_row_html_prints_what_the_template_printed(named) -> None:
    """save_markup.matrix_row is the save page's old template loop, tag for tag and escape for
    escape (only the whitespace between tags differs)."""
    import re
    from types import SimpleNamespace

    from django.template import Context, Template

    from memory.selectors.matrix import MatrixCell
    from memory.web.views.save_markup import matrix_row

    hostile = '<b>"Q&A" it\'s</b>'
    viewer_id = f"v{hostile}"
    cells = [
        (SimpleNamespace(id="bob"), MatrixCell(label="the hooded figure", state="descriptor")),
        (SimpleNamespace(id=viewer_id), None),
        (SimpleNamespace(id=hostile), MatrixCell(label=hostile, state="known")),
        (SimpleNamespace(id="dora"), MatrixCell(label=None, state="unknown")),
        (SimpleNamespace(id="eve"), MatrixCell(label=" ", state="descriptor", suspicions=("a",))),
        (
            SimpleNamespace(id="fay"),
            MatrixCell(label=hostile, state="descriptor", suspicions=("b", hostile)),
        ),
    ]
    context = {
        "url": "/saves/s/viewers/v%3Cb%3E/?a=1&b=2",
        "viewer_id": viewer_id,
        "viewer_name": hostile if named else viewer_id,
        "cells": cells,
    }
    before = Template(OLD_MATRIX_ROW).render(Context(context))
    after = Template("{{ row }}").render(
        Context({"row": matrix_row(viewer_id, context["viewer_name"], context["url"], cells)})
    )

    def tags(html: str) -> str:
        return re.sub(r">\s+<", "><", html)

    assert tags(after) == tags(before)
    assert after.count("<td") == 6 and after.count(" suspicious") == 2 and "&lt;b&gt;" in after
