"""The pieces of HTML pages print by the dozen, made in Python rather than in their
templates: the aliases panel's rows and the viewer switcher's links (and the CSRF input the
rows' forms carry) and the buffer panel's lines; save_markup.py beside it makes a save
page's (its viewer list and knowledge matrix), leak_rows.py the leak report's and the
triage queue's. Nothing else in the app builds HTML in Python but
memory.html_pieces, whose `html` (format_html without its lazy-string checks) every value
goes through, escaped as the template escaped it.

Why not the template (issue 26, measured with a throwaway script, 60 editor rows, the four
ways run in turn 150 times on 2 shared cores at load 2-3; min / median): the row as a
template loop under the cached loader 6.58 / 12.35 ms, as a partial per row about the same;
these format_html rows 4.78 / 9.41 ms; the f-strings with html.escape they replace 0.77 /
1.43 ms. The cached loader spares the compile, not the ~40 lookups, escapes and lazy-string
checks a row's `{{ }}` cost, and format_html pays most of the same escaping. The bytes are
what viewer.html printed: tests/test_viewer_windows.py renders the old template loop beside
these for every row state and compares.
"""

from __future__ import annotations

from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from memory.html_pieces import EMPTY, html, html_join, moment_html, reading_lines, span_html

# Pieces of a row that hold no value, made safe once.
_SELECTED = mark_safe(' class="selected" aria-current="true"')
_NOT_IN_WORLD = mark_safe(' <span class="muted">(not in world)</span>')
_SET = mark_safe('<button type="submit" name="action" value="set">Save</button>')


def id_hint(name: str, entity_id: str) -> SafeString:
    """The id beside a name that is not the id (nothing when the name is the id)."""
    return html(' <code class="id-hint">{}</code>', entity_id) if name != entity_id else EMPTY


_CURRENT = mark_safe(' aria-current="page"')


def alias_row(item: dict[str, Any], viewer_name: str, can_edit: bool, csrf: str) -> SafeString:
    """One alias row's <tr>: the label cell is the inline editor for editors (a refused label
    stays in the input with the reason beside it; Forget asks first), the label for readers;
    then the suggested descriptor and, for editors, one click to use it; beside who it is,
    the lines naming them and what the viewer remembers of them over time. What a person
    reads (screen-reader labels, the Forget question, the pair link) names the viewer and the
    target in words: `viewer_name`, and the item's `person` (true name, else what the viewer
    can see)."""
    if item["named"]:
        who = html(
            '<span class="qa-info" title="true name: QA information, never shown to the '
            'viewer">{}</span> <code class="id-hint">{}</code>',
            item["name"],
            item["target"],
        )
    else:
        who = item["target"]
    if can_edit:
        cell = _editor_cell(item, viewer_name, csrf)
    else:
        cell = html('<span class="state-{}">{}</span>', item["state"], item["shown_as"])
    errors = warnings = offer = EMPTY
    if item["errors"]:
        errors = html(
            '<ul class="error" id="alias-err-{}" role="alert">{}{}</ul>',
            item["dom"],
            html_join("<li>{}</li>", ((m,) for m in item["errors"])),
            EMPTY
            if item["rejected"] is None
            else html(
                '<li class="muted">Not saved; {} still calls them \u201c{}\u201d.</li>',
                viewer_name,
                item["shown_as"],
            ),
        )
    if item["warnings"]:
        warnings = html(
            '<ul class="warning" id="alias-warn-{}" role="status">{}</ul>',
            item["dom"],
            html_join("<li>Saved, but: {}</li>", ((m,) for m in item["warnings"])),
        )
    suspicious = EMPTY
    if item["suspicions"]:
        # Stored already (an import, the game): said, never hidden or changed.
        suspicious = html(
            '<ul class="warning suspicious" id="alias-check-{}">{}</ul>',
            item["dom"],
            html_join("<li>Check: {}</li>", ((m,) for m in item["suspicions"])),
        )
    if item["offer"]:
        offer = html(
            '\n            <form class="alias-suggest" method="post" action="{url}" '
            'hx-post="{url}" hx-target="#aliases-panel" hx-swap="outerHTML">{csrf}'
            '<button type="submit" name="action" value="suggest" class="secondary" '
            'aria-label="Use \u201c{suggestion}\u201d as the label for {target}">Use</button>'
            "</form>",
            url=item["edit_url"],
            csrf=csrf,
            suggestion=item["suggestion"],
            target=item["person"],
        )
    pair = EMPTY
    if item["pair_url"]:
        pair = html(
            '<br><a class="pair-link small" href="{}">what {} remembers of {}</a>',
            item["pair_url"],
            viewer_name,
            item["person"],
        )
    return html(
        '<tr id="alias-{dom}" data-target="{target}"{selected}>\n        <th scope="row">'
        "{who}{not_in_world}\n"
        '          <a class="uses-link small" href="{uses}" hx-get="{uses}" '
        'hx-target="#buffer-panel" hx-swap="outerHTML" hx-push-url="true" '
        'aria-label="Buffer lines naming {name}">lines</a>{pair}</th>\n        <td>{cell}\n'
        "          {errors}\n          {warnings}{suspicious}\n"
        '          <span class="suggestion small muted">suggested: {suggestion}{offer}</span>\n'
        '        </td>\n        <td><span class="badge state-{state}">{state}</span></td>\n'
        "      </tr>",
        dom=item["dom"],
        target=item["target"],
        selected=_SELECTED if item["selected"] else EMPTY,
        who=who,
        not_in_world=EMPTY if item["in_world"] else _NOT_IN_WORLD,
        uses=item["uses_url"],
        name=item["name"],
        pair=pair,
        cell=cell,
        errors=errors,
        warnings=warnings,
        suspicious=suspicious,
        suggestion=item["suggestion"],
        offer=offer,
        state=item["state"],
    )


def _editor_cell(item: dict[str, Any], viewer_name: str, csrf: str) -> SafeString:
    """The label's inline editor: Save, and Forget when there is a label to forget."""
    if item["errors"]:
        described = html(' aria-invalid="true" aria-describedby="alias-err-{}"', item["dom"])
    elif item["warnings"]:
        described = html(' aria-describedby="alias-warn-{}"', item["dom"])
    else:
        described = EMPTY
    forget = EMPTY
    if item["label"] is not None:
        forget = html(
            '<button type="submit" name="action" value="delete" class="secondary" '
            'data-confirm="Forget the label \u201c{}\u201d that {} uses for {}? Lines about '
            'them will use a description again.">Forget</button>',
            item["label"],
            viewer_name,
            item["person"],
        )
    return html(
        '\n          <form class="alias-form" method="post" action="{url}" hx-post="{url}" '
        'hx-target="#aliases-panel" hx-swap="outerHTML">{csrf}\n'
        '            <label class="visually-hidden" for="label-{dom}">Label {viewer_name} uses for '
        "{person}</label>\n"
        '            <input id="label-{dom}" name="label" value="{value}" '
        'placeholder="{shown_as}"{described}>\n'
        "            {set}\n            {forget}\n          </form>",
        url=item["edit_url"],
        csrf=csrf,
        dom=item["dom"],
        viewer_name=viewer_name,
        person=item["person"],
        value=item["value"],
        shown_as=item["shown_as"],
        described=described,
        set=_SET,
        forget=forget,
    )


def csrf_input(token: str) -> SafeString:
    """What {% csrf_token %} prints, made once for the two forms of every alias row."""
    return html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token)


def session_name(kind: str, people: list[str], place: object, key: str, qa: bool) -> SafeString:
    """A session by what it is, with whom and where, as the viewer calls the people and the
    place ("A conversation with the bartender at a low-beamed tavern": the people first, as a
    place's description may itself go on "with …"), never by its key; the key is a QA hint.
    `place` comes from session_places, `people` (its latest moment's) from session_people."""
    if people:
        said = [html("{}", who) for who in people]
        who = (
            html(" with {} and {}", mark_safe(", ".join(said[:-1])), said[-1])
            if len(said) > 1
            else html(" with {}", said[0])
        )
    else:
        who = EMPTY
    return html(
        "{}{} at {}{}",
        "A scene" if kind == "scene" else "A conversation",
        who,
        place,
        html(' <code class="id-hint">{}</code>', key) if qa else EMPTY,
    )


def session_row(item: dict[str, Any], years: bool, qa: bool) -> SafeString:
    """One row of the sessions table, as viewer.html's loop printed it: the session by name
    (and its key in QA mode), its summary (stale or not), span and counts. Twenty rows with
    an include and a span tag each were a third of the sessions panel."""
    s, summary = item["s"], item["summary"]
    about = EMPTY
    if summary and summary[0]:
        stale = mark_safe(' <span class="badge">stale</span>') if summary[1] else EMPTY
        about = html('<div class="summary small">{}{}</div>', summary[0], stale)
    of = html(' <span class="muted">of {}</span>', s.memory_count)
    return html(
        '\n      <tr id="{}" data-session="{}"{}>\n        <td>{}\n          {}</td>\n'
        '        <td class="span-cell">{}</td>\n        <td class="num">{}{} '
        '<span class="muted small">({} spoken)</span></td>\n      </tr>\n    ',
        item["dom"],
        s.session_key,
        _SELECTED if item["selected"] else EMPTY,
        session_name(s.kind, item["people"], item["place"], s.session_key, qa),
        about,
        span_html(s.first_at, s.last_at, years),
        s.live_count,
        of if s.live_count != s.memory_count else EMPTY,
        s.dialogue_count,
    )


def switch_link(link: dict[str, Any]) -> SafeString:
    """One viewer switcher <li>: fifty of them in the engine cost more than the two queries
    that pick them."""
    return html(
        '<li><a href="{url}" hx-get="{url}" hx-target="#viewer-panels" hx-swap="outerHTML" '
        'hx-push-url="true" data-viewer-id="{viewer_id}"{current}>{name}{hint}</a></li>',
        url=link["url"],
        viewer_id=link["id"],
        current=_CURRENT if link["current"] else EMPTY,
        name=link["name"],
        hint=html(' <code class="id-hint">{}</code>', link["id"]) if link["named"] else EMPTY,
    )


def viewer_options(choices: list[tuple[str, str]], selected: str | None) -> SafeString:
    """The leak report's viewer filter: an <option> per (id, name), the name with the id
    beside it when they differ, as its template loop printed them. A 2,000-viewer world
    lists 2,000: made with html.escape (Django's escape, character for character), a tenth
    of what format_html takes for each."""
    out = []
    for viewer_id, name in choices:
        value = escape(viewer_id)
        out.append(
            f'<option value="{value}"{" selected" if viewer_id == selected else ""}>'
            f"{escape(name)}{f' ({value})' if name != viewer_id else ''}</option>"
        )
    return mark_safe("".join(out))


_ABSTRACTED = mark_safe('<span class="badge">abstracted</span>')
_RETRACTED = mark_safe(' <span class="badge">retracted</span>')


def buffer_line(item: dict[str, Any], *, years: bool, qa: bool) -> SafeString:
    """One line of a viewer's buffer panel (an item of viewer_panels' buffer context): its
    time (the permalink that selects it), the line as the viewer reads it, who saw the
    moment, and in QA mode the row's ids and intent. Fifty lines through the template's
    loop, include and tags were 7 of the buffer fragment's 16 ms."""
    e = item["e"]
    if e.line is not None:
        text = reading_lines(e)
    else:
        text = html('<span class="line muted">undeliverable: {}</span>', e.undeliverable)
    classes = "".join(
        name
        for name, on in (
            (" retracted", e.retracted),
            (" undeliverable", e.line is None),
            (" selected", item["selected"]),
        )
        if on
    )
    return html(
        '<li id="{dom}" class="buffer-line{classes}" tabindex="-1" data-entry-id="{id}"{current}>'
        '\n      <a class="line-time" href="{url}" hx-get="{url}" hx-target="#viewer-panels" '
        'hx-swap="outerHTML" hx-push-url="true">{moment}<span class="visually-hidden"> (select '
        'this line)</span></a>\n      <div class="line-body">\n      {text}{retracted}\n      '
        '{abstracted}\n      <a class="seen-by" href="{event_url}">seen by {witnesses}<span '
        'class="visually-hidden"> witness{es}: the moment as each remembers it</span></a>\n'
        "      {qa}\n      </div>\n    </li>",
        dom=item["dom"],
        classes=classes,
        id=e.id,
        current=mark_safe(' aria-current="true"') if item["selected"] else EMPTY,
        url=item["select_url"],
        moment=moment_html(e.timestamp, years),
        text=text,
        retracted=_RETRACTED if e.retracted else EMPTY,
        abstracted=_ABSTRACTED if e.abstracted_into else EMPTY,
        event_url=item["event_url"],
        witnesses=item["witnesses"],
        es="" if item["witnesses"] == 1 else "es",
        qa=_qa_ids(item) if qa else EMPTY,
    )


def _qa_ids(item: dict[str, Any]) -> SafeString:
    """A buffer line's ids in QA mode: the row (a link to it), its type, actor and targets
    each by true name beside the id, and the stored intent and outcome as written."""
    e = item["e"]
    targets = [_qa_who(t) for t in item["targets"]]
    return html(
        '\n      <div class="qa-ids">\n        <a href="{url}">id {id}</a> · type {type} · '
        'actor {actor} · targets {targets}\n        <pre class="qa-intent">{intent}</pre>\n'
        "        {outcome}\n      </div>\n      ",
        url=item["entry_url"],
        id=e.id,
        type="?" if e.type is None else e.type,
        actor=_qa_who(item["actor"]) if item["actor"] else "?",
        targets=mark_safe(", ".join(targets)) if targets else "none",
        intent=e.intent_json,
        outcome=html('<pre class="qa-intent">{}</pre>', e.outcome_json)
        if e.outcome_json
        else EMPTY,
    )


def _qa_who(who: dict[str, Any]) -> SafeString:
    """An entity as QA mode names it: the true name, the id beside it when they differ."""
    if who["named"]:
        return html('{} <code class="id-hint">{}</code>', who["name"], who["id"])
    return html("<code>{}</code>", who["id"])
