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

from memory.html_pieces import (
    EMPTY,
    escaped,
    html,
    moment_html,
    reading_lines,
    said_words,
    span_html,
)

# Pieces of a row that hold no value, made safe once. A row made here is returned as
# SafeString(...), not mark_safe(...): its lazy-string check cost 0.9 µs a call, eight times
# the string's making.
_SELECTED = mark_safe(' class="selected" aria-current="true"')
_NOT_IN_WORLD = mark_safe(' <span class="muted">(not in world)</span>')
_SET = mark_safe('<button type="submit" name="action" value="set">Save</button>')


def id_hint(name: str, entity_id: str) -> SafeString:
    """The id beside a name that is not the id (nothing when the name is the id)."""
    return html(' <code class="id-hint">{}</code>', entity_id) if name != entity_id else EMPTY


_CURRENT = mark_safe(' aria-current="page"')
_OPEN = mark_safe(' <span class="badge">open</span>')


def alias_row(item: dict[str, Any], viewer_name: str, can_edit: bool, csrf: str) -> SafeString:
    """One alias row's <tr>: the label cell is the inline editor for editors (a refused label
    stays in the input with the reason beside it; Forget asks first), the label for readers;
    then the suggested descriptor and, for editors, one click to use it; beside who it is,
    the lines naming them and what the viewer remembers of them over time. What a person
    reads (screen-reader labels, the Forget question, the pair link) names the viewer and the
    target in words: `viewer_name`, and the item's `person` (true name, else what the viewer
    can see).

    f-strings with each value escaped once (html.escape, as the template escaped it), as
    viewer_options makes its options: a row put together by `html` a piece at a time escaped
    the viewer's name, the person and the URLs again in every piece, 30 µs a row of which a
    page shows 35 (the bytes are the template's: tests/test_viewer_windows.py)."""
    target, name, person, dom = (escape(item[k]) for k in ("target", "name", "person", "dom"))
    viewer = escape(viewer_name)
    if item["named"]:
        who = (
            '<span class="qa-info" title="true name: QA information, never shown to the '
            f'viewer">{name}</span> <code class="id-hint">{target}</code>'
        )
    else:
        who = target
    if can_edit:
        cell = _editor_cell(item, viewer, person, dom, csrf)
    else:
        cell = f'<span class="state-{escape(item["state"])}">{escape(item["shown_as"])}</span>'
    errors = warnings = suspicious = offer = pair = ""
    if item["errors"]:
        said = "".join(f"<li>{escape(m)}</li>" for m in item["errors"])
        if item["rejected"] is not None:
            said += (
                f'<li class="muted">Not saved; {viewer} still calls them '
                f"\u201c{escape(item['shown_as'])}\u201d.</li>"
            )
        errors = f'<ul class="error" id="alias-err-{dom}" role="alert">{said}</ul>'
    if item["warnings"]:
        said = "".join(f"<li>Saved, but: {escape(m)}</li>" for m in item["warnings"])
        warnings = f'<ul class="warning" id="alias-warn-{dom}" role="status">{said}</ul>'
    if item["suspicions"]:
        # Stored already (an import, the game): said, never hidden or changed.
        said = "".join(f"<li>Check: {escape(m)}</li>" for m in item["suspicions"])
        suspicious = f'<ul class="warning suspicious" id="alias-check-{dom}">{said}</ul>'
    suggestion = escape(item["suggestion"])
    if item["offer"]:
        url = escape(item["edit_url"])
        offer = (
            f'\n            <form class="alias-suggest" method="post" action="{url}" '
            f'hx-post="{url}" hx-target="#aliases-panel" hx-swap="outerHTML">{csrf}'
            '<button type="submit" name="action" value="suggest" class="secondary" '
            f'aria-label="Use \u201c{suggestion}\u201d as the label for {person}">Use</button>'
            "</form>"
        )
    if item["pair_url"]:
        pair = (
            f'<br><a class="pair-link small" href="{escape(item["pair_url"])}">'
            f"what {viewer} remembers of {person}</a>"
        )
    uses, state = escape(item["uses_url"]), escape(item["state"])
    selected = _SELECTED if item["selected"] else ""
    not_in_world = "" if item["in_world"] else _NOT_IN_WORLD
    return SafeString(
        f'<tr id="alias-{dom}" data-target="{target}"{selected}>\n        <th scope="row">'
        f"{who}{not_in_world}\n"
        f'          <a class="uses-link small" href="{uses}" hx-get="{uses}" '
        'hx-target="#buffer-panel" hx-swap="outerHTML" hx-push-url="true" '
        f'aria-label="Buffer lines naming {name}">lines</a>{pair}</th>\n        <td>{cell}\n'
        f"          {errors}\n          {warnings}{suspicious}\n"
        f'          <span class="suggestion small muted">suggested: {suggestion}{offer}</span>\n'
        f'        </td>\n        <td><span class="badge state-{state}">{state}</span></td>\n'
        "      </tr>"
    )


def _editor_cell(item: dict[str, Any], viewer: str, person: str, dom: str, csrf: str) -> str:
    """The label's inline editor: Save, and Forget when there is a label to forget (`viewer`,
    `person` and `dom` escaped already)."""
    if item["errors"]:
        described = f' aria-invalid="true" aria-describedby="alias-err-{dom}"'
    elif item["warnings"]:
        described = f' aria-describedby="alias-warn-{dom}"'
    else:
        described = ""
    forget = ""
    if item["label"] is not None:
        forget = (
            '<button type="submit" name="action" value="delete" class="secondary" '
            f'data-confirm="Forget the label \u201c{escape(item["label"])}\u201d that {viewer} '
            f'uses for {person}? Lines about them will use a description again.">Forget</button>'
        )
    url = escape(item["edit_url"])
    return (
        f'\n          <form class="alias-form" method="post" action="{url}" hx-post="{url}" '
        f'hx-target="#aliases-panel" hx-swap="outerHTML">{csrf}\n'
        f'            <label class="visually-hidden" for="label-{dom}">Label {viewer} uses for '
        f"{person}</label>\n"
        f'            <input id="label-{dom}" name="label" value="{escape(item["value"])}" '
        f'placeholder="{escape(item["shown_as"])}"{described}>\n'
        f"            {_SET}\n            {forget}\n          </form>"
    )


def csrf_input(token: str) -> SafeString:
    """What {% csrf_token %} prints, made once for the two forms of every alias row."""
    return html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token)


def session_name(kind: str, people: list[str], place: object, key: str, qa: bool) -> SafeString:
    """A session by what it is, with whom and where, as the viewer calls the people and the
    place ("A conversation with the bartender at a low-beamed tavern": the people first, as a
    place's description may itself go on "with …"), never by its key; the key is a QA hint.
    `place` comes from session_places, `people` (its latest moment's) from session_people."""
    said = [escape(who) for who in people]
    if len(said) > 1:
        who = f" with {', '.join(said[:-1])} and {said[-1]}"
    else:
        who = f" with {said[0]}" if said else ""
    hint = f' <code class="id-hint">{escape(key)}</code>' if qa else ""
    what = "A scene" if kind == "scene" else "A conversation"
    return SafeString(f"{what}{who} at {escaped(place)}{hint}")


def session_row(item: dict[str, Any], years: bool, qa: bool) -> SafeString:
    """One row of the sessions table, as viewer.html's loop printed it: the session by name
    (and its key in QA mode), its summary (stale or not), span and counts. Twenty rows with
    an include and a span tag each were a third of the sessions panel; f-strings with each
    value escaped once, as alias_row, half of what `html` a piece at a time cost."""
    s, summary = item["s"], item["summary"]
    about = ""
    if summary and summary[0]:
        stale = ' <span class="badge">stale</span>' if summary[1] else ""
        about = f'<div class="summary small">{escape(summary[0])}{stale}</div>'
    of = (
        f' <span class="muted">of {s.memory_count}</span>' if s.live_count != s.memory_count else ""
    )
    name = session_name(s.kind, item["people"], item["place"], s.session_key, qa)
    return SafeString(
        f'\n      <tr id="{escape(item["dom"])}" data-session="{escape(s.session_key)}"'
        f"{_SELECTED if item['selected'] else ''}>\n        <td>{name}\n          {about}</td>\n"
        f'        <td class="span-cell">{span_html(s.first_at, s.last_at, years)}</td>\n'
        f'        <td class="num">{s.live_count}{of} '
        f'<span class="muted small">({s.dialogue_count} spoken)</span></td>\n      </tr>\n    '
    )


def timeline_rects(bars: list[dict[str, Any]], years: bool) -> SafeString:
    """The episode timeline's <rect>s (viewer_panels._timeline's bars), as viewer.html's loop
    printed them: each with its episode's span said in words in its <title>."""
    out = []
    for bar in bars:
        e = bar["episode"]
        first, last = escape(said_words(e.first_at, years)), escape(said_words(e.last_at, years))
        out.append(
            f'<rect class="episode{" open" if e.is_open else ""}'
            f'{" selected" if bar["selected"] else ""}" x="{escape(bar["x"])}" y="0" '
            f'width="{escape(bar["width"])}" height="10"><title>Episode {escape(str(e.ordinal))}: '
            f"{escape(str(e.member_count))} memories, {first} – {last}"
            f"{' (open)' if e.is_open else ''}</title></rect>"
        )
    return SafeString("".join(out))


def episode_items(items: list[dict[str, Any]], years: bool) -> SafeString:
    """The episodes list's <li>s (each {"e": episode, "selected": bool}), as viewer.html's
    loop printed them."""
    out = []
    for item in items:
        e = item["e"]
        ordinal, n = escape(str(e.ordinal)), e.member_count
        out.append(
            f'\n    <li id="episode-{ordinal}" value="{ordinal}"'
            f"{_SELECTED if item['selected'] else ''}>{span_html(e.first_at, e.last_at, years)}"
            f" · {escape(str(n))} memor{'y' if n == 1 else 'ies'}"
            f"{_OPEN if e.is_open else ''}</li>\n    "
        )
    return SafeString("".join(out))


def switch_link(link: dict[str, Any]) -> SafeString:
    """One viewer switcher <li>: fifty of them in the engine cost more than the two queries
    that pick them (f-strings, each value escaped once, as alias_row)."""
    url, viewer_id = escape(link["url"]), escape(link["id"])
    hint = f' <code class="id-hint">{viewer_id}</code>' if link["named"] else ""
    return SafeString(
        f'<li><a href="{url}" hx-get="{url}" hx-target="#viewer-panels" hx-swap="outerHTML" '
        f'hx-push-url="true" data-viewer-id="{viewer_id}"{_CURRENT if link["current"] else ""}>'
        f"{escape(link['name'])}{hint}</a></li>"
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
