"""A save page's pieces made in Python rather than in its template (markup.py says why):
its list of viewers (50 entries: 1.3 ms as the template's loop, 0.1 as these) and its
knowledge matrix's rows (300 cells: 13-15 ms of the template, of about 25). The bytes are
what save.html printed: tests/test_matrix.py and tests/test_save_markup.py render the old
template loops beside these, hostile text included, and compare."""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe

from memory.engine.aliases import shown_label
from memory.html_pieces import html
from memory.web.views.markup import id_hint


def viewer_items(entities) -> SafeString:
    """The <li> of each (entity, its page's URL): its name as a link, its id beside a name
    that is not the id, and its world."""
    return mark_safe(
        "\n".join(
            f'<li><a href="{escape(url)}">{escape(e.name)}</a><br><span class="muted small">'
            f"{_id_then(e)}{escape(str(e.world_id))}</span></li>"
            for e, url in entities
        )
    )


def _id_then(entity) -> str:
    return f'<code class="id-hint">{escape(entity.id)}</code> · ' if entity.named else ""


_SELF_CELL = mark_safe('<td class="self" aria-label="self">·</td>')


def matrix_row(viewer_id: str, viewer_name: str, url: str, cells) -> SafeString:
    """One knowledge-matrix row: the viewer (a link, its id beside a name), then per target
    the label it uses (— for none), classed by state; its own column marked self. `cells`
    is the window's [(target, cell or None)]."""
    hint = id_hint(viewer_name, viewer_id)
    viewer = escape(viewer_id)  # once a row, not once a cell
    tds = [
        (
            _checked_cell(viewer_id, target.id, cell)
            if cell.suspicions
            else _cell(viewer, target.id, cell)
        )
        if cell
        else _SELF_CELL
        for target, cell in cells
    ]
    return html(
        '<tr>\n        <th scope="row"><a href="{}">{}</a>{}</th>\n        {}\n      </tr>',
        url,
        viewer_name,
        hint,
        SafeString("\n        ".join(tds)),
    )


def _cell(viewer: str, target_id: str, cell) -> str:
    """A plain cell (`viewer`: the viewer's id, escaped already): formatted directly, each
    value escaped as `html` escapes it; a page draws 300 of them, and `html`'s call per value
    was most of the matrix's markup."""
    state = escape(cell.state)
    label = "—" if cell.label is None else escape(cell.label)
    return (
        f'<td class="state-{state}" data-viewer="{viewer}" data-target="{escape(target_id)}" '
        f'title="{state}">{label}</td>'
    )


def _checked_cell(viewer_id: str, target_id: str, cell) -> SafeString:
    """A cell whose stored label is suspicious: marked and said (a blank label shows as
    [no label]), its label still as omnia prints it."""
    reasons = "; ".join(cell.suspicions)
    return html(
        '<td class="state-{state} suspicious" data-viewer="{viewer}" data-target="{target}" '
        'title="{state}; check: {reasons}"><span aria-hidden="true">⚠ </span>{label}'
        '<span class="visually-hidden"> (check: {reasons})</span></td>',
        state=cell.state,
        viewer=viewer_id,
        target=target_id,
        reasons=reasons,
        label=shown_label(cell.label),
    )
