"""The buffer panel's lines made in Python (memory/web/views/markup.py: buffer_line) print,
byte for byte, what viewer.html's loop printed, in every state a line can be in, with
hostile text in every field; and the times and readings memory.html_pieces makes for the
template tags are the tags' own."""

from __future__ import annotations

import itertools

import pytest
from django.template import Context, Template
from django.urls import reverse

from memory.engine.buffer.rendered import RenderedEntry
from memory.web.views import markup

HOSTILE = '<script>alert("x")</script> & it\'s {0} {name}'

# templates/memory/viewer.html's buffer loop before the lines were made in Python.
OLD_BUFFER_LOOP = (
    "{% load inspector %}"
    + """{% for item in buffer.lines %}{% with e=item.e %}
    <li id="{{ item.dom }}" class="buffer-line{% if e.retracted %} retracted{% endif %}{% if e.line is None %} undeliverable{% endif %}{% if item.selected %} selected{% endif %}" tabindex="-1" data-entry-id="{{ e.id }}"{% if item.selected %} aria-current="true"{% endif %}>
      <a class="line-time" href="{{ item.select_url }}" hx-get="{{ item.select_url }}" hx-target="#viewer-panels" hx-swap="outerHTML" hx-push-url="true">{% moment e.timestamp %}<span class="visually-hidden"> (select this line)</span></a>
      <div class="line-body">
      {% include "memory/_line_text.html" %}
      {% if e.abstracted_into %}<span class="badge">abstracted</span>{% endif %}
      <a class="seen-by" href="{{ item.event_url }}">seen by {{ item.witnesses }}<span class="visually-hidden"> witness{{ item.witnesses|pluralize:"es" }}: the moment as each remembers it</span></a>
      {% if buffer.state.qa %}
      <div class="qa-ids">
        <a href="{% url 'memory:entry' request.save.name viewer.id e.id %}">id {{ e.id }}</a> · type {{ e.type|default_if_none:"?" }} · actor {% if item.actor %}{% include "memory/_qa_who.html" with who=item.actor %}{% else %}?{% endif %} · targets {% for t in item.targets %}{% include "memory/_qa_who.html" with who=t %}{% if not forloop.last %}, {% endif %}{% empty %}none{% endfor %}
        <pre class="qa-intent">{{ e.intent_json }}</pre>
        {% if e.outcome_json %}<pre class="qa-intent">{{ e.outcome_json }}</pre>{% endif %}
      </div>
      {% endif %}
      </div>
    </li>
    {% endwith %}{% empty %}
    {% endfor %}"""
)


def _entry(n: int, *, line, corrected, retracted, abstracted, type_, outcome, text=""):
    return RenderedEntry(
        id=f"row-{n}{text}",
        timestamp=["2026-07-06T12:00:00.000Z", "not a time" + text, "2025-12-31T23:59:00Z"][n % 3],
        created_at=n,
        line=line,
        undeliverable=None if line is not None else f"no actor{text}",
        intent_json=f'{{"type": "dialogue", "description": "{text}"}}',
        outcome_json=outcome,
        type=type_,
        actor_id="bob",
        target_ids=("charlie",),
        location_id=None,
        conversation_id=None,
        retracted=retracted,
        abstracted_into=abstracted,
        line_corrected=corrected,
    )


def _items(text: str) -> list[dict]:
    """One line per combination of the states a line's markup depends on."""
    who = [
        None,
        {"id": "bob" + text, "name": "Gareth" + text, "named": True},
        {"id": "charlie" + text, "name": "charlie" + text, "named": False},
    ]
    items = []
    states = itertools.product(
        [None, "He waves" + text, "I waves" + text],  # undeliverable, one reading, two
        [False, True],  # retracted
        [None, "summary-1"],  # abstracted
        [None, "dialogue" + text],  # type
        [None, "", '{"ok": true}' + text],  # outcome
        [0, 1, 2],  # witnesses
        [False, True],  # selected
    )
    for n, (line, retracted, abstracted, type_, outcome, witnesses, selected) in enumerate(states):
        corrected = "He waves" + text if line == "I waves" + text else line
        e = _entry(
            n,
            line=line,
            corrected=corrected,
            retracted=retracted,
            abstracted=abstracted,
            type_=type_,
            outcome=outcome,
            text=text,
        )
        items.append(
            {
                "e": e,
                "dom": f"line-row-{n}",
                "select_url": f"/saves/s/viewers/v/?line=row-{n}{text}#line-row-{n}",
                "event_url": f"/saves/s/events/{n}{text}/",
                "witnesses": witnesses,
                "selected": selected,
                "actor": who[n % 3],
                "targets": [who[1 + (n + k) % 2] for k in range(n % 3)],
                # As {% url %} made it in the old loop (the view reverses them all at once).
                "entry_url": reverse("memory:entry", args=["s", "v", e.id]),
            }
        )
    return items


@pytest.mark.parametrize("text", ["", HOSTILE])
@pytest.mark.parametrize("qa", [False, True])
@pytest.mark.parametrize("years", [False, True])
def test_buffer_lines_print_what_the_template_loop_printed(text, qa, years):
    items = _items(text)
    context = {
        "buffer": {"lines": items, "state": {"qa": qa}},
        "request": {"save": {"name": "s"}},
        "viewer": {"id": "v"},
        "world_years": years,
    }
    old = Template(OLD_BUFFER_LOOP).render(Context(context))
    new = "".join(f"\n    {markup.buffer_line(item, years=years, qa=qa)}\n    " for item in items)
    assert new == old
    assert len(items) == 3 * 2 * 2 * 2 * 3 * 3 * 2
    if text:
        assert "<script>" not in new
