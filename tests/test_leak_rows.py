"""The leak report's and the triage queue's rows made in Python (memory/web/views/leak_rows.py)
print, byte for byte, what their template loops printed, in every state a row can be in and
with hostile text in every field."""

from __future__ import annotations

import itertools

import pytest
from django.template import Context, Template

from memory import html_pieces
from memory.web.views import leak_rows, markup

HOSTILE = '<script>alert("x")</script> & it\'s {0} {name}'

# templates/memory/leaks.html's row loop before the rows were made in Python.
OLD_LEAK_LOOP = """{% for f in findings %}
      <tr id="leak-{{ f.dom }}" class="leak-row leak-{{ f.kind|slugify }} state-{{ f.state }}" data-viewer="{{ f.viewer_id }}" data-kind="{{ f.kind }}" data-state="{{ f.state }}">
        <td data-label="viewer"><a href="{{ f.viewer_url }}">{{ f.viewer_name }}</a>{% if f.viewer_name != f.viewer_id %} <code class="id-hint">{{ f.viewer_id }}</code>{% endif %}</td>
        <td data-label="world" class="world">{{ f.world_id|default:"—" }}</td>
        <td data-label="leak" class="leak-context">
          <span class="badge kind-{{ f.kind|slugify }}">{{ f.kind }}</span>{% if f.likely_description %} <span class="badge description" title="an ordinary word written as a description at every occurrence">likely a description</span>{% endif %} <span class="section muted small">in {{ f.section }}</span>
          <q class="snippet">{{ f.context_before }}<mark>{{ f.text }}</mark>{{ f.context_after }}</q>
          <span class="why small muted">{{ f.reason_named }}</span>
        </td>
        <td data-label="×" class="count">{{ f.count }}</td>
        <td data-label="entity">{% if f.entity_id %}{{ f.entity_name }}{% if f.entity_name != f.entity_id %} <code class="id-hint">{{ f.entity_id }}</code>{% endif %}{% else %}—{% endif %}</td>
        <td data-label="state">{% if f.state == "accepted" %}<span class="badge accepted">accepted</span> <span class="small">{{ f.accepted_reason }}</span>{% if f.accepted_by %} <span class="small muted">— {{ f.accepted_by }}</span>{% endif %}{% else %}<span class="badge open">open</span>{% endif %}</td>
        <td data-label="go to" class="links">
          <a class="to-prompt" href="{{ f.prompt_url }}">in prompt</a>
          {% for url in f.source_urls %}{% if forloop.first %}<a class="to-source" href="{{ url }}">source row</a>{% else %}<a class="to-source more" href="{{ url }}">row {{ forloop.counter }}</a>{% endif %}{% endfor %}
        </td>
        {% if can_edit %}
        <td data-label="act" class="actions">
          {% if f.state == "accepted" %}
          <form method="post" action="{{ reopen_url }}" hx-post="{{ reopen_url }}" hx-target="#leak-table" hx-swap="outerHTML">{% csrf_token %}
            {% include "memory/_leak_key.html" %}
            <button type="submit" class="secondary">Reopen</button>
          </form>
          {% else %}
          <details class="accept"{% if problem.key == f.problem_key %} open{% endif %}>
            <summary>Accept as expected</summary>
            <form method="post" action="{{ accept_url }}" hx-post="{{ accept_url }}" hx-target="#leak-table" hx-swap="outerHTML">{% csrf_token %}
              {% include "memory/_leak_key.html" %}
              <label for="reason-{{ f.dom }}">Why it is expected</label>
              <input id="reason-{{ f.dom }}" name="reason" required maxlength="2000">
              <button type="submit">Accept</button>
            </form>
          </details>
          {% endif %}
          {% if f.can_alias %}
          <details class="add-alias"{% if problem.key == f.alias_key %} open{% endif %}>
            <summary>Add alias</summary>
            <form method="post" action="{{ alias_post_url }}" hx-post="{{ alias_post_url }}" hx-target="#leak-table" hx-swap="outerHTML">{% csrf_token %}
              <input type="hidden" name="viewer_id" value="{{ f.viewer_id }}">
              <input type="hidden" name="target_id" value="{{ f.entity_id }}">
              {% for name, value in filters.items %}<input type="hidden" name="filter_{{ name }}" value="{{ value }}">{% endfor %}
              <label for="alias-{{ f.dom }}">Label {{ f.viewer_name }} uses for {{ f.entity_name }}</label>
              <input id="alias-{{ f.dom }}" name="label" required value="{% if f.kind == 'unknown_name' %}{{ f.entity_name }}{% endif %}">
              <button type="submit">Save alias</button>
              <a class="small" href="{{ f.alias_url }}">alias editor</a>
            </form>
          </details>
          {% endif %}
          {% if problem.error and problem.key == f.problem_key or problem.error and problem.key == f.alias_key %}<p class="error" role="alert">{{ problem.error }}</p>{% endif %}
        </td>
        {% endif %}
      </tr>
    {% endfor %}"""

# templates/memory/triage.html's row loop before the rows were made in Python.
OLD_TRIAGE_LOOP = """{% for f in page.items %}
      <tr class="leak-row state-{{ f.state }}{% if f.likely_description %} likely-description{% endif %}" data-save="{{ f.save }}" data-viewer="{{ f.viewer_id }}" data-kind="{{ f.kind }}" data-state="{{ f.state }}">
        {% if can_edit %}<td data-label="select"><input type="checkbox" form="bulk" name="key" value="{{ f.key }}" id="tick-{{ forloop.counter }}" aria-label="{{ f.text }} in {{ f.viewer_name }}’s prompt ({{ f.save }})"></td>{% endif %}
        <td data-label="save · viewer"><span class="muted small">{{ f.save }}</span> <a href="{{ f.prompt_url }}">{{ f.viewer_name }}</a></td>
        <td data-label="leak" class="leak-context">
          <span class="badge kind-{{ f.kind|slugify }}">{{ f.kind_words }}</span>{% if f.likely_description %} <span class="badge description" title="an ordinary word written as a description at every occurrence">likely a description</span>{% endif %} <span class="section muted small">in {{ f.section }}</span>
          <q class="snippet">{{ f.context_before }}<mark>{{ f.text }}</mark>{{ f.context_after }}</q>
        </td>
        <td data-label="×" class="count">{{ f.count }}</td>
        <td data-label="about">{% if f.entity_id %}{{ f.entity_name }}{% else %}—{% endif %}</td>
        <td data-label="state">{% if f.state == "accepted" %}<span class="badge accepted">accepted</span>{% else %}<span class="badge open">open</span>{% endif %}</td>
        {% if can_edit %}<td data-label="allow" class="actions">{% if f.entity_id %}
          <details class="allow">
            <summary>Allow “{{ f.text }}”</summary>
            <form method="post" action="{% url 'memory:triage_allow' %}" hx-post="{% url 'memory:triage_allow' %}" hx-target="#triage-panel" hx-swap="outerHTML">{% csrf_token %}
              <input type="hidden" name="word" value="{{ f.text }}">
              <input type="hidden" name="entity_id" value="{{ f.entity_id }}">
              <input type="hidden" name="save" value="{{ f.save }}">
              <input type="hidden" name="viewer_id" value="{{ f.viewer_id }}">
              {% include "memory/_triage_filters.html" %}
              <label for="scope-{{ forloop.counter }}">For</label>
              <select id="scope-{{ forloop.counter }}" name="scope">
                <option value="viewer">{{ f.viewer_name }} only</option>
                <option value="save" selected>everyone in {{ f.save }}</option>
                <option value="everywhere">every save</option>
              </select>
              <label for="allow-reason-{{ forloop.counter }}">Why it is fine</label>
              <input id="allow-reason-{{ forloop.counter }}" name="reason" required maxlength="2000">
              <button type="submit">Allow</button>
            </form>
          </details>{% endif %}</td>{% endif %}
      </tr>
    {% endfor %}"""


# templates/memory/save.html's loop of open leaks per viewer before its rows were made in Python.
OLD_COUNT_LOOP = """    {% for viewer_id, viewer_name, per_kind, total, prompt_url, report_url in leak_rows %}
      <tr data-viewer="{{ viewer_id }}"><th scope="row"><a href="{{ prompt_url }}">{{ viewer_name }}</a>{% if viewer_name != viewer_id %} <code class="id-hint">{{ viewer_id }}</code>{% endif %}</th>{% for n in per_kind %}<td>{{ n }}</td>{% endfor %}<td>{% if total %}<a href="{{ report_url }}"><strong>{{ total }}</strong></a>{% else %}0{% endif %}</td></tr>
    {% endfor %}"""


def test_count_row_prints_what_the_template_loop_printed() -> None:
    rows = [
        (
            "npc-1",
            "Pip Dunn",
            [3, 0, 1],
            4,
            "/saves/s/viewers/npc-1/prompt/",
            "/s/leaks/?viewer=npc-1",
        ),
        ("npc-2", "npc-2", [0, 0, 0], 0, "/p/", "/r/?viewer=npc-2"),
        (HOSTILE, HOSTILE, [1], 1, "/p?a=1&b=2", "/r/?viewer=%3Cscript%3E"),
    ]
    before = Template(OLD_COUNT_LOOP).render(Context({"leak_rows": rows}))
    made = [leak_rows.count_row(*row) for row in rows]
    after = Template("    {% for row in rows %}\n      {{ row }}\n    {% endfor %}").render(
        Context({"rows": made})
    )
    assert after == before


def _leaks() -> list[dict]:
    base = {
        "dom": "npc-1-recent-unknown_name-12",
        "kind": "unknown_name",
        "state": "open",
        "viewer_id": "npc-1",
        "viewer_url": "/saves/s/viewers/npc-1/",
        "viewer_name": "Pip Dunn",
        "world_id": "harbour",
        "likely_description": False,
        "section": "recent",
        "context_before": "met ",
        "text": "Sable Quint",
        "context_after": " at the quay",
        "reason_named": "Pip Dunn never learned this name",
        "count": 3,
        "entity_id": "npc-2",
        "entity_name": "Sable Quint",
        "accepted_reason": "",
        "accepted_by": "",
        "prompt_url": "/saves/s/viewers/npc-1/prompt/#leak-at-12",
        "source_urls": ["/saves/s/viewers/npc-1/entries/e1/", "/saves/s/viewers/npc-1/entries/e2/"],
        "can_alias": True,
        "alias_url": "/saves/s/viewers/npc-1/aliases/?all_aliases=1#alias-npc-2",
        "problem_key": "npc-1|recent|unknown_name|Sable Quint",
        "alias_key": "alias|npc-1|npc-2",
    }
    yield base
    yield {**base, "state": "accepted", "accepted_reason": "a sign", "accepted_by": "ed"}
    yield {**base, "state": "accepted", "accepted_reason": "no one", "accepted_by": ""}
    yield {**base, "kind": "system_id", "can_alias": False, "likely_description": True}
    yield {**base, "entity_id": None, "entity_name": None, "can_alias": False, "world_id": None}
    yield {**base, "viewer_name": "npc-1", "entity_name": "npc-2", "source_urls": []}
    yield {**base, "kind": "tag_leak", "source_urls": ["/a/", "/b/", "/c/"], "count": 1}
    yield {k: HOSTILE if isinstance(v, str) else v for k, v in base.items()}


PROBLEMS = [
    {},
    {"key": "npc-1|recent|unknown_name|Sable Quint", "error": "That finding moved <b>.</b>"},
    {"key": "alias|npc-1|npc-2", "error": HOSTILE},
    {"key": "alias|npc-1|npc-2"},
    {"key": "somewhere else", "error": "gone"},
]


@pytest.mark.parametrize(("can_edit", "problem"), list(itertools.product([True, False], PROBLEMS)))
def test_leak_row_prints_what_the_template_loop_printed(can_edit, problem) -> None:
    findings = list(_leaks())
    filters = {"viewer": HOSTILE, "sort": "kind", "from": "50"}
    urls = {"accept": "/s/leaks/accept/", "reopen": "/s/leaks/reopen/", "alias": "/s/a?x=1&y=2"}
    token = "t0k&n"
    before = Template(OLD_LEAK_LOOP).render(
        Context(
            {
                "findings": findings,
                "can_edit": can_edit,
                "problem": problem,
                "filters": filters,
                "csrf_token": token,
                "accept_url": urls["accept"],
                "reopen_url": urls["reopen"],
                "alias_post_url": urls["alias"],
            }
        )
    )
    csrf = markup.csrf_input(token)
    hidden = leak_rows.filter_inputs(filters)
    rows = [
        leak_rows.leak_row(
            f, can_edit=can_edit, csrf=csrf, filters=hidden, problem=problem, urls=urls
        )
        for f in findings
    ]
    after = Template("{% for row in rows %}{{ row }}{% endfor %}").render(Context({"rows": rows}))
    assert after == before


def _queue_items() -> list[dict]:
    base = {
        "save": "harbour",
        "viewer_id": "npc-1",
        "viewer_name": "Pip Dunn",
        "section": "recent",
        "kind": "unknown_name",
        "kind_words": "name it never learned",
        "text": "Sable Quint",
        "entity_id": "npc-2",
        "entity_name": "Sable Quint",
        "count": 2,
        "context_before": "met ",
        "context_after": " at the quay",
        "likely_description": False,
        "state": "open",
        "key": '["harbour", "npc-1", "recent", "unknown_name", "Sable Quint"]',
        "prompt_url": "/saves/harbour/viewers/npc-1/prompt/",
    }
    yield base
    yield {**base, "state": "accepted", "likely_description": True}
    yield {**base, "entity_id": None, "entity_name": None, "kind": "system_id"}
    yield {k: HOSTILE if isinstance(v, str) else v for k, v in base.items()}


@pytest.mark.parametrize("can_edit", [True, False])
@pytest.mark.parametrize("cursor", [None, "abc&<d>"])
def test_triage_row_prints_what_the_template_loop_printed(can_edit, cursor) -> None:
    from django.template.loader import render_to_string
    from django.urls import reverse
    from django.utils.safestring import mark_safe

    items = list(_queue_items())
    filters = {"save": "harbour", "word": HOSTILE}
    token = "t0k&n"
    context = {"page": {"items": items}, "can_edit": can_edit, "filters": filters}
    context.update(cursor=cursor, csrf_token=token)
    before = Template(OLD_TRIAGE_LOOP).render(Context(context))
    hidden = mark_safe(
        render_to_string("memory/_triage_filters.html", {"filters": filters, "cursor": cursor})
    )
    rows = [
        leak_rows.triage_row(
            item,
            n,
            can_edit=can_edit,
            csrf=markup.csrf_input(token),
            filters=hidden,
            allow_url=reverse("memory:triage_allow"),
        )
        for n, item in enumerate(items, 1)
    ]
    after = Template("{% for row in rows %}{{ row }}{% endfor %}").render(Context({"rows": rows}))
    assert after == before


# templates/memory/triage.html's facet loop before the <select>s were made in Python.
OLD_FACET_LOOP = """    {% for facet in facets %}
    <label>{{ facet.name|capfirst }}
    <select id="facet-{{ facet.name }}" name="{{ facet.name }}">
      <option value="">any {{ facet.name }}</option>
      {% for value, words, n in facet.values %}<option value="{{ value }}"{% if value == facet.chosen %} selected{% endif %}>{{ words }}{% if facet.name == "viewer" and words != value %} ({{ value }}){% endif %} — {{ n }}</option>{% endfor %}
    </select></label>
    {% endfor %}
"""


def test_facet_select_prints_what_the_template_loop_printed() -> None:
    """Every facet, with and without a value chosen, a viewer named as its id and not,
    hostile values and words, a value with no finding left (0) and an empty list."""
    facets = [
        {"name": "save", "values": [("harbour", "harbour", 12)], "chosen": None},
        {
            "name": "viewer",
            "values": [("npc-1", "Gareth", 9), ("npc-2", "npc-2", 3), (HOSTILE, HOSTILE, 1)],
            "chosen": "npc-2",
        },
        {"name": "kind", "values": [("system_id", "system id", 4)], "chosen": "system_id"},
        {
            "name": "word",
            "values": [(HOSTILE, HOSTILE, 0), ("sable", "sable", 2)],
            "chosen": HOSTILE,
        },
        {"name": "state", "values": [], "chosen": None},
        {"name": "viewer", "values": [(HOSTILE, "Gareth & <b>", 2)], "chosen": None},
    ]
    before = Template(OLD_FACET_LOOP).render(Context({"facets": facets}))
    selects = [leak_rows.facet_select(f["name"], f["values"], f["chosen"]) for f in facets]
    after = Template("    {% for s in selects %}{{ s }}{% endfor %}\n").render(
        Context({"selects": selects})
    )
    assert after == before


def test_html_escapes_as_format_html_does() -> None:
    from django.utils.html import format_html
    from django.utils.safestring import mark_safe

    values = [HOSTILE, mark_safe("<b>safe</b>"), 3, None, "\u00e9\"'&<>", 2.5]
    template = " | ".join("{}" for _ in values)
    assert html_pieces.html(template, *values) == format_html(template, *values)
    assert html_pieces.html("{a}{b}", a=HOSTILE, b=mark_safe("<i>")) == format_html(
        "{a}{b}", a=HOSTILE, b=mark_safe("<i>")
    )
