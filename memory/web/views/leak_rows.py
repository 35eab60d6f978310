"""The rows of the leak report and of the triage queue, and a save page's open leaks per
viewer, made in Python (markup.py says why): fifty rows a page, each with its forms, were a
third of either page as template loops (14 ms of the leak report's 44 at 20,000 findings),
the fifty rows of counts 2 of a save page's 6 ms of template. The bytes are what the loops
printed: tests/test_leak_rows.py renders the old loops beside these and compares, for every
state a row can be in."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from memory.html_pieces import EMPTY, html, html_join
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
    accept, reopen and alias actions."""
    if f["state"] == "accepted":
        by = html(' <span class="small muted">— {}</span>', f["accepted_by"])
        state = html(
            '{} <span class="small">{}</span>{}',
            _ACCEPTED,
            f["accepted_reason"],
            by if f["accepted_by"] else EMPTY,
        )
    else:
        state = _OPEN
    if f["entity_id"]:
        entity = html("{}{}", f["entity_name"], id_hint(f["entity_name"], f["entity_id"]))
    else:
        entity = "—"
    sources = SafeString(
        "".join(
            html('<a class="to-source" href="{}">source row</a>', url)
            if n == 1
            else html('<a class="to-source more" href="{}">row {}</a>', url, n)
            for n, url in enumerate(f["source_urls"], 1)
        )
    )
    row = html(
        '\n      <tr id="leak-{dom}" class="leak-row leak-{slug} state-{state}" '
        'data-viewer="{viewer_id}" data-kind="{kind}" data-state="{state}">\n'
        '        <td data-label="viewer"><a href="{viewer_url}">{viewer_name}</a>{viewer_hint}</td>\n'
        '        <td data-label="world" class="world">{world}</td>\n'
        '        <td data-label="leak" class="leak-context">\n'
        '          <span class="badge kind-{slug}">{kind}</span>{description} '
        '<span class="section muted small">in {section}</span>\n'
        '          <q class="snippet">{before}<mark>{text}</mark>{after}</q>\n'
        '          <span class="why small muted">{reason}</span>\n'
        "        </td>\n"
        '        <td data-label="×" class="count">{count}</td>\n'
        '        <td data-label="entity">{entity}</td>\n'
        '        <td data-label="state">{state_cell}</td>\n'
        '        <td data-label="go to" class="links">\n'
        '          <a class="to-prompt" href="{prompt_url}">in prompt</a>\n'
        "          {sources}\n"
        "        </td>\n"
        "        {actions}\n"
        "      </tr>\n    ",
        dom=f["dom"],
        slug=slugify(f["kind"]),
        state=f["state"],
        viewer_id=f["viewer_id"],
        kind=f["kind"],
        viewer_url=f["viewer_url"],
        viewer_name=f["viewer_name"],
        viewer_hint=id_hint(f["viewer_name"], f["viewer_id"]),
        world=f["world_id"] or "—",
        description=_DESCRIPTION if f["likely_description"] else EMPTY,
        section=f["section"],
        before=f["context_before"],
        text=f["text"],
        after=f["context_after"],
        reason=f["reason_named"],
        count=f["count"],
        entity=entity,
        state_cell=state,
        prompt_url=f["prompt_url"],
        sources=sources,
        actions=_leak_actions(f, csrf, filters, problem, urls) if can_edit else EMPTY,
    )
    return row


def _leak_actions(
    f: dict[str, Any],
    csrf: SafeString,
    filters: SafeString,
    problem: dict[str, Any],
    urls: dict[str, str],
) -> SafeString:
    key = html(
        '<input type="hidden" name="viewer_id" value="{}"><input type="hidden" name="section" '
        'value="{}"><input type="hidden" name="kind" value="{}"><input type="hidden" '
        'name="text" value="{}">{}\n',
        f["viewer_id"],
        f["section"],
        f["kind"],
        f["text"],
        filters,
    )
    form = (
        '<form method="post" action="{url}" hx-post="{url}" hx-target="#leak-table" '
        'hx-swap="outerHTML">{csrf}\n'
    )
    if f["state"] == "accepted":
        act = html(
            "\n          " + form + "            {key}\n"
            '            <button type="submit" class="secondary">Reopen</button>\n'
            "          </form>\n          ",
            url=urls["reopen"],
            csrf=csrf,
            key=key,
        )
    else:
        act = html(
            '\n          <details class="accept"{open}>\n'
            "            <summary>Accept as expected</summary>\n"
            "            " + form + "              {key}\n"
            '              <label for="reason-{dom}">Why it is expected</label>\n'
            '              <input id="reason-{dom}" name="reason" required maxlength="2000">\n'
            '              <button type="submit">Accept</button>\n'
            "            </form>\n          </details>\n          ",
            open=mark_safe(" open") if problem.get("key") == f["problem_key"] else EMPTY,
            url=urls["accept"],
            csrf=csrf,
            key=key,
            dom=f["dom"],
        )
    alias = EMPTY
    if f["can_alias"]:
        alias = html(
            '\n          <details class="add-alias"{open}>\n'
            "            <summary>Add alias</summary>\n"
            "            " + form + '              <input type="hidden" name="viewer_id" '
            'value="{viewer_id}">\n'
            '              <input type="hidden" name="target_id" value="{entity_id}">\n'
            "              {filters}\n"
            '              <label for="alias-{dom}">Label {viewer_name} uses for {entity_name}'
            "</label>\n"
            '              <input id="alias-{dom}" name="label" required value="{label}">\n'
            '              <button type="submit">Save alias</button>\n'
            '              <a class="small" href="{alias_url}">alias editor</a>\n'
            "            </form>\n          </details>\n          ",
            open=mark_safe(" open") if problem.get("key") == f["alias_key"] else EMPTY,
            url=urls["alias"],
            csrf=csrf,
            viewer_id=f["viewer_id"],
            entity_id=f["entity_id"],
            filters=filters,
            dom=f["dom"],
            viewer_name=f["viewer_name"],
            entity_name=f["entity_name"],
            label=f["entity_name"] if f["kind"] == "unknown_name" else "",
            alias_url=f["alias_url"],
        )
    error = EMPTY
    if problem.get("error") and problem.get("key") in (f["problem_key"], f["alias_key"]):
        error = html('<p class="error" role="alert">{}</p>', problem["error"])
    return html(
        '\n        <td data-label="act" class="actions">\n          {}\n          {}\n'
        "          {}\n        </td>\n        ",
        act,
        alias,
        error,
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
    filters (and cursor) as the forms carry them back."""
    tick = EMPTY
    if can_edit:
        tick = html(
            '<td data-label="select"><input type="checkbox" form="bulk" name="key" value="{}" '
            'id="tick-{}" aria-label="{} in {}’s prompt ({})"></td>',
            f["key"],
            counter,
            f["text"],
            f["viewer_name"],
            f["save"],
        )
    allow = EMPTY
    if can_edit:
        allow = html(
            '<td data-label="allow" class="actions">{}</td>',
            _allow_form(f, counter, csrf, filters, allow_url) if f["entity_id"] else EMPTY,
        )
    return html(
        '\n      <tr class="leak-row state-{state}{likely}" data-save="{save}" '
        'data-viewer="{viewer_id}" data-kind="{kind}" data-state="{state}">\n'
        "        {tick}\n"
        '        <td data-label="save · viewer"><span class="muted small">{save}</span> '
        '<a href="{prompt_url}">{viewer_name}</a></td>\n'
        '        <td data-label="leak" class="leak-context">\n'
        '          <span class="badge kind-{slug}">{kind_words}</span>{description} '
        '<span class="section muted small">in {section}</span>\n'
        '          <q class="snippet">{before}<mark>{text}</mark>{after}</q>\n'
        "        </td>\n"
        '        <td data-label="×" class="count">{count}</td>\n'
        '        <td data-label="about">{about}</td>\n'
        '        <td data-label="state">{state_badge}</td>\n'
        "        {allow}\n"
        "      </tr>\n    ",
        state=f["state"],
        likely=mark_safe(" likely-description") if f["likely_description"] else EMPTY,
        save=f["save"],
        viewer_id=f["viewer_id"],
        kind=f["kind"],
        tick=tick,
        prompt_url=f["prompt_url"],
        viewer_name=f["viewer_name"],
        slug=slugify(f["kind"]),
        kind_words=f["kind_words"],
        description=_DESCRIPTION if f["likely_description"] else EMPTY,
        section=f["section"],
        before=f["context_before"],
        text=f["text"],
        after=f["context_after"],
        count=f["count"],
        about=f["entity_name"] if f["entity_id"] else "—",
        state_badge=_ACCEPTED if f["state"] == "accepted" else _OPEN,
        allow=allow,
    )


def _allow_form(
    f: dict[str, Any], counter: int, csrf: SafeString, filters: SafeString, allow_url: str
) -> SafeString:
    return html(
        '\n          <details class="allow">\n'
        "            <summary>Allow “{text}”</summary>\n"
        '            <form method="post" action="{url}" hx-post="{url}" '
        'hx-target="#triage-panel" hx-swap="outerHTML">{csrf}\n'
        '              <input type="hidden" name="word" value="{text}">\n'
        '              <input type="hidden" name="entity_id" value="{entity_id}">\n'
        '              <input type="hidden" name="save" value="{save}">\n'
        '              <input type="hidden" name="viewer_id" value="{viewer_id}">\n'
        "              {filters}\n"
        '              <label for="scope-{n}">For</label>\n'
        '              <select id="scope-{n}" name="scope">\n'
        '                <option value="viewer">{viewer_name} only</option>\n'
        '                <option value="save" selected>everyone in {save}</option>\n'
        '                <option value="everywhere">every save</option>\n'
        "              </select>\n"
        '              <label for="allow-reason-{n}">Why it is fine</label>\n'
        '              <input id="allow-reason-{n}" name="reason" required maxlength="2000">\n'
        '              <button type="submit">Allow</button>\n'
        "            </form>\n          </details>",
        text=f["text"],
        url=allow_url,
        csrf=csrf,
        entity_id=f["entity_id"],
        save=f["save"],
        viewer_id=f["viewer_id"],
        filters=filters,
        n=counter,
        viewer_name=f["viewer_name"],
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
    findings of each kind, and the total (to its rows in the leak report)."""
    cells = html_join("<td>{}</td>", ((n,) for n in per_kind))
    return html(
        '<tr data-viewer="{}"><th scope="row"><a href="{}">{}</a>{}</th>{}<td>{}</td></tr>',
        viewer_id,
        prompt_url,
        viewer_name,
        id_hint(viewer_name, viewer_id),
        cells,
        html('<a href="{}"><strong>{}</strong></a>', report_url, total) if total else 0,
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
