"""The rows of the leak report and of the triage queue, and a save page's open leaks per
viewer, made in Python (markup.py says why): fifty rows a page, each with its forms, were a
third of either page as template loops (14 ms of the leak report's 44 at 20,000 findings),
the fifty rows of counts 2 of a save page's 6 ms of template. The bytes are what the loops
printed: tests/test_leak_rows.py renders the old loops beside these and compares, for every
state a row can be in."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from memory.html_pieces import EMPTY, escaped, html, html_join
from memory.web.views.markup import id_hint

_DESCRIPTION = mark_safe(
    ' <span class="badge description" title="an ordinary word written as a description at '
    'every occurrence">likely a description</span>'
)
_OPEN = mark_safe('<span class="badge open">open</span>')
_ACCEPTED = mark_safe('<span class="badge accepted">accepted</span>')
_SELECTED = mark_safe(" selected")


def filter_inputs(filters: dict[str, str]) -> SafeString:
    """The report's filters as hidden inputs, which every form of a row carries back."""
    return html_join('<input type="hidden" name="filter_{}" value="{}">', filters.items())


# slugify(kind), remembered: a page slugs the same few kinds once a row (a slugify is a
# Unicode normalisation and two regular expressions).
_slug = lru_cache(maxsize=256)(slugify)


def leak_row(
    f: dict[str, Any],
    *,
    can_edit: bool,
    csrf: SafeString,
    filters: SafeString,
    problem: dict[str, Any],
    urls: dict[str, str],
) -> SafeString:
    """One leak report row: who, where, the leak in its context and why, its state and the
    links to it; for editors, accept (or reopen) and, for a name the viewer could be given,
    add an alias. `csrf`: the token's input; `filters`: filter_inputs; `urls`: the forms'
    accept, reopen and alias actions. f-strings with each value escaped once, as
    markup.alias_row (put together by `html` a piece at a time, 0.2 ms a row)."""
    state = escaped(f["state"])
    if f["state"] == "accepted":
        by = f' <span class="small muted">— {escaped(f["accepted_by"])}</span>'
        state_cell = (
            f'{_ACCEPTED} <span class="small">{escaped(f["accepted_reason"])}</span>'
            f"{by if f['accepted_by'] else ''}"
        )
    else:
        state_cell = _OPEN
    if f["entity_id"]:
        entity = f"{escaped(f['entity_name'])}{id_hint(f['entity_name'], f['entity_id'])}"
    else:
        entity = "—"
    sources = "".join(
        f'<a class="to-source" href="{escaped(url)}">source row</a>'
        if n == 1
        else f'<a class="to-source more" href="{escaped(url)}">row {n}</a>'
        for n, url in enumerate(f["source_urls"], 1)
    )
    viewer_id, kind, slug = escaped(f["viewer_id"]), escaped(f["kind"]), escaped(_slug(f["kind"]))
    actions = _leak_actions(f, csrf, filters, problem, urls) if can_edit else ""
    return SafeString(
        f'\n      <tr id="leak-{escaped(f["dom"])}" class="leak-row leak-{slug} state-{state}" '
        f'data-viewer="{viewer_id}" data-kind="{kind}" data-state="{state}">\n'
        f'        <td data-label="viewer"><a href="{escaped(f["viewer_url"])}">'
        f"{escaped(f['viewer_name'])}</a>{id_hint(f['viewer_name'], f['viewer_id'])}</td>\n"
        f'        <td data-label="world" class="world">{escaped(f["world_id"] or "—")}</td>\n'
        '        <td data-label="leak" class="leak-context">\n'
        f'          <span class="badge kind-{slug}">{kind}</span>'
        f"{_DESCRIPTION if f['likely_description'] else ''} "
        f'<span class="section muted small">in {escaped(f["section"])}</span>\n'
        f'          <q class="snippet">{escaped(f["context_before"])}<mark>{escaped(f["text"])}'
        f"</mark>{escaped(f['context_after'])}</q>\n"
        f'          <span class="why small muted">{escaped(f["reason_named"])}</span>\n'
        "        </td>\n"
        f'        <td data-label="×" class="count">{escaped(f["count"])}</td>\n'
        f'        <td data-label="entity">{entity}</td>\n'
        f'        <td data-label="state">{state_cell}</td>\n'
        '        <td data-label="go to" class="links">\n'
        f'          <a class="to-prompt" href="{escaped(f["prompt_url"])}">in prompt</a>\n'
        f"          {sources}\n"
        "        </td>\n"
        f"        {actions}\n"
        "      </tr>\n    "
    )


def _leak_actions(
    f: dict[str, Any],
    csrf: SafeString,
    filters: SafeString,
    problem: dict[str, Any],
    urls: dict[str, str],
) -> str:
    viewer_id, dom = escaped(f["viewer_id"]), escaped(f["dom"])
    key = (
        f'<input type="hidden" name="viewer_id" value="{viewer_id}"><input type="hidden" '
        f'name="section" value="{escaped(f["section"])}"><input type="hidden" name="kind" '
        f'value="{escaped(f["kind"])}"><input type="hidden" name="text" '
        f'value="{escaped(f["text"])}">{filters}\n'
    )

    def form(url: str) -> str:
        url = escaped(url)
        return (
            f'<form method="post" action="{url}" hx-post="{url}" hx-target="#leak-table" '
            f'hx-swap="outerHTML">{csrf}\n'
        )

    if f["state"] == "accepted":
        act = (
            f"\n          {form(urls['reopen'])}            {key}\n"
            '            <button type="submit" class="secondary">Reopen</button>\n'
            "          </form>\n          "
        )
    else:
        opened = " open" if problem.get("key") == f["problem_key"] else ""
        act = (
            f'\n          <details class="accept"{opened}>\n'
            "            <summary>Accept as expected</summary>\n"
            f"            {form(urls['accept'])}              {key}\n"
            f'              <label for="reason-{dom}">Why it is expected</label>\n'
            f'              <input id="reason-{dom}" name="reason" required maxlength="2000">\n'
            '              <button type="submit">Accept</button>\n'
            "            </form>\n          </details>\n          "
        )
    alias = ""
    if f["can_alias"]:
        opened = " open" if problem.get("key") == f["alias_key"] else ""
        label = f["entity_name"] if f["kind"] == "unknown_name" else ""
        alias = (
            f'\n          <details class="add-alias"{opened}>\n'
            "            <summary>Add alias</summary>\n"
            f"            {form(urls['alias'])}"
            f'              <input type="hidden" name="viewer_id" value="{viewer_id}">\n'
            f'              <input type="hidden" name="target_id" '
            f'value="{escaped(f["entity_id"])}">\n'
            f"              {filters}\n"
            f'              <label for="alias-{dom}">Label {escaped(f["viewer_name"])} uses for '
            f"{escaped(f['entity_name'])}</label>\n"
            f'              <input id="alias-{dom}" name="label" required value="{escaped(label)}">\n'
            '              <button type="submit">Save alias</button>\n'
            f'              <a class="small" href="{escaped(f["alias_url"])}">alias editor</a>\n'
            "            </form>\n          </details>\n          "
        )
    error = ""
    if problem.get("error") and problem.get("key") in (f["problem_key"], f["alias_key"]):
        error = f'<p class="error" role="alert">{escaped(problem["error"])}</p>'
    return (
        f'\n        <td data-label="act" class="actions">\n          {act}\n          {alias}\n'
        f"          {error}\n        </td>\n        "
    )


def triage_row(
    f: dict[str, Any],
    counter: int,
    *,
    can_edit: bool,
    csrf: SafeString,
    filters: SafeString,
    allow_url: str,
) -> SafeString:
    """One triage queue row: its tick box (editors), save and viewer, the leak in context,
    whom it is about and its state; for editors, allowing its word for its entity.
    `counter`: the row's place on the page (1…), which its ids carry; `filters`: the queue's
    filters (and cursor) as the forms carry them back. f-strings, each value escaped once."""
    text, viewer_name, save = escaped(f["text"]), escaped(f["viewer_name"]), escaped(f["save"])
    tick = allow = ""
    if can_edit:
        tick = (
            '<td data-label="select"><input type="checkbox" form="bulk" name="key" '
            f'value="{escaped(f["key"])}" id="tick-{counter}" '
            f'aria-label="{text} in {viewer_name}’s prompt ({save})"></td>'
        )
        form = _allow_form(f, counter, csrf, filters, allow_url) if f["entity_id"] else ""
        allow = f'<td data-label="allow" class="actions">{form}</td>'
    state, kind = escaped(f["state"]), escaped(f["kind"])
    return SafeString(
        f'\n      <tr class="leak-row state-{state}'
        f'{" likely-description" if f["likely_description"] else ""}" data-save="{save}" '
        f'data-viewer="{escaped(f["viewer_id"])}" data-kind="{kind}" data-state="{state}">\n'
        f"        {tick}\n"
        f'        <td data-label="save · viewer"><span class="muted small">{save}</span> '
        f'<a href="{escaped(f["prompt_url"])}">{viewer_name}</a></td>\n'
        '        <td data-label="leak" class="leak-context">\n'
        f'          <span class="badge kind-{escaped(_slug(f["kind"]))}">'
        f"{escaped(f['kind_words'])}</span>{_DESCRIPTION if f['likely_description'] else ''} "
        f'<span class="section muted small">in {escaped(f["section"])}</span>\n'
        f'          <q class="snippet">{escaped(f["context_before"])}<mark>{text}</mark>'
        f"{escaped(f['context_after'])}</q>\n"
        "        </td>\n"
        f'        <td data-label="×" class="count">{escaped(f["count"])}</td>\n'
        f'        <td data-label="about">'
        f"{escaped(f['entity_name']) if f['entity_id'] else '—'}</td>\n"
        f'        <td data-label="state">{_ACCEPTED if f["state"] == "accepted" else _OPEN}</td>\n'
        f"        {allow}\n"
        "      </tr>\n    "
    )


def _allow_form(
    f: dict[str, Any], counter: int, csrf: SafeString, filters: SafeString, allow_url: str
) -> str:
    text, url, save = escaped(f["text"]), escaped(allow_url), escaped(f["save"])
    return (
        '\n          <details class="allow">\n'
        f"            <summary>Allow “{text}”</summary>\n"
        f'            <form method="post" action="{url}" hx-post="{url}" '
        f'hx-target="#triage-panel" hx-swap="outerHTML">{csrf}\n'
        f'              <input type="hidden" name="word" value="{text}">\n'
        f'              <input type="hidden" name="entity_id" value="{escaped(f["entity_id"])}">\n'
        f'              <input type="hidden" name="save" value="{save}">\n'
        f'              <input type="hidden" name="viewer_id" value="{escaped(f["viewer_id"])}">\n'
        f"              {filters}\n"
        f'              <label for="scope-{counter}">For</label>\n'
        f'              <select id="scope-{counter}" name="scope">\n'
        f'                <option value="viewer">{escaped(f["viewer_name"])} only</option>\n'
        f'                <option value="save" selected>everyone in {save}</option>\n'
        '                <option value="everywhere">every save</option>\n'
        "              </select>\n"
        f'              <label for="allow-reason-{counter}">Why it is fine</label>\n'
        f'              <input id="allow-reason-{counter}" name="reason" required maxlength="2000">\n'
        '              <button type="submit">Allow</button>\n'
        "            </form>\n          </details>"
    )


def count_row(
    viewer_id: str,
    viewer_name: str,
    per_kind: list[int],
    total: int,
    prompt_url: str,
    report_url: str,
) -> SafeString:
    """One row of a save page's open leaks per viewer: the viewer (to its prompt), its open
    findings of each kind, and the total (to its rows in the leak report). f-strings, each
    value escaped once (a save page draws 50)."""
    cells = "".join([f"<td>{escaped(n)}</td>" for n in per_kind])
    shown = (
        f'<a href="{escaped(report_url)}"><strong>{escaped(total)}</strong></a>' if total else "0"
    )
    return SafeString(
        f'<tr data-viewer="{escaped(viewer_id)}"><th scope="row"><a href="{escaped(prompt_url)}">'
        f"{escaped(viewer_name)}</a>{id_hint(viewer_name, viewer_id)}</th>{cells}"
        f"<td>{shown}</td></tr>"
    )


def facet_select(name: str, values: list[tuple[str, str, int]], chosen: str | None) -> SafeString:
    """One of the triage queue's facet filters: a <select> of its values, each with its
    findings, the one chosen selected (a viewer's id beside its name when they differ). Five
    lists of up to 31 options were 1.5 ms of the queue's page as a template loop."""
    options = "".join(
        html(
            '<option value="{}"{}>{}{} — {}</option>',
            value,
            _SELECTED if value == chosen else EMPTY,
            words,
            html(" ({})", value) if name == "viewer" and words != value else EMPTY,
            n,
        )
        for value, words, n in values
    )
    return html(
        '\n    <label>{}\n    <select id="facet-{}" name="{}">\n'
        '      <option value="">any {}</option>\n      {}\n    </select></label>\n    ',
        name[:1].upper() + name[1:],
        name,
        name,
        name,
        mark_safe(options),
    )
