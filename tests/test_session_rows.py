"""The sessions table's rows made in Python (memory/web/views/markup.py: session_row) print,
byte for byte, what viewer.html's loop printed (with memory/_session_name.html and the span
tag), in every state a row can be in, with hostile text in every field."""

from __future__ import annotations

import itertools

import pytest
from django.template import Context, Template

from memory.engine.projections.doors import SessionItem
from memory.web.views import markup

HOSTILE = '<script>alert("x")</script> & it\'s {0} {name}'

# templates/memory/viewer.html's sessions loop before the rows were made in Python, with the
# memory/_session_name.html it included (gone with it) in its place.
_OLD_SESSION_NAME = (
    '{% if s.kind == "scene" %}A scene{% else %}A conversation{% endif %}{% if people %} with '
    "{% for who in people %}{{ who }}{% if not forloop.last %}{% if forloop.revcounter == 2 %}"
    " and {% else %}, {% endif %}{% endif %}{% endfor %}{% endif %} at {{ place }}"
    '{% if qa %} <code class="id-hint">{{ s.session_key }}</code>{% endif %}'
)
OLD_SESSIONS_LOOP = (
    "{% load inspector %}"
    + """{% for item in sessions.sessions %}{% with s=item.s summary=item.summary %}
      <tr id="{{ item.dom }}" data-session="{{ s.session_key }}"{% if item.selected %} class="selected" aria-current="true"{% endif %}>
        <td>{% with place=item.place people=item.people qa=sessions.qa %}NAME{% endwith %}
          {% if summary and summary.0 %}<div class="summary small">{{ summary.0 }}{% if summary.1 %} <span class="badge">stale</span>{% endif %}</div>{% endif %}</td>
        <td class="span-cell">{% span s.first_at s.last_at %}</td>
        <td class="num">{{ s.live_count }}{% if s.live_count != s.memory_count %} <span class="muted">of {{ s.memory_count }}</span>{% endif %} <span class="muted small">({{ s.dialogue_count }} spoken)</span></td>
      </tr>
    {% endwith %}{% empty %}
      <tr><td colspan="3" class="muted">No sessions.</td></tr>
    {% endfor %}"""
).replace("NAME", _OLD_SESSION_NAME)

SPANS = [
    ("2026-07-06T12:00:00.000Z", "2026-07-06T12:00:00.000Z"),  # one moment
    ("2026-07-06T12:00:00.000Z", "2026-07-06T13:30:00.000Z"),  # one day
    ("2026-07-06T12:00:00.000Z", "2026-07-09T08:00:00.000Z"),  # days apart
    ("2025-12-31T23:59:00.000Z", "2026-01-01T00:01:00.000Z"),  # a year going by
    ("not a time", "2026-07-06T12:00:00.000Z"),  # a stamp that names no instant
]


def _items(text: str) -> list[dict]:
    items = []
    states = itertools.product(
        ["conversation", "scene"],
        [[], ["Ann" + text], ["Ann" + text, "Bo"], ["Ann", "Bo" + text, "Cy"]],
        [None, ("", False), ("We spoke of ferries" + text, False), ("Stale words" + text, True)],
        SPANS,
        [(3, 3), (2, 3)],  # live_count, memory_count (one retracted)
        [False, True],  # selected
        [None, "the inn" + text],
    )
    for n, (kind, people, summary, (first, last), (live, every), selected, place) in enumerate(
        states
    ):
        s = SessionItem(
            session_key=f"key-{n}{text}",
            kind=kind,
            first_at=first,
            last_at=last,
            memory_count=every,
            dialogue_count=n % 4,
            last_member_id="m",
            content_hash="h",
            live_count=live,
        )
        items.append(
            {
                "s": s,
                "summary": summary,
                "place": place,
                "people": people,
                "dom": f"session-key-{n}",
                "selected": selected,
            }
        )
    return items


@pytest.mark.parametrize("text", ["", HOSTILE])
@pytest.mark.parametrize("qa", [False, True])
@pytest.mark.parametrize("years", [False, True])
def test_session_rows_print_what_the_template_loop_printed(text, qa, years):
    items = _items(text)
    context = {"sessions": {"sessions": items, "qa": qa}, "world_years": years}
    old = Template(OLD_SESSIONS_LOOP).render(Context(context))
    new = "".join(markup.session_row(item, years, qa) for item in items)
    assert new == old
    assert len(items) == 2 * 4 * 4 * 5 * 2 * 2 * 2
    if text:
        assert "<script>" not in new


def test_the_panel_prints_the_rows_or_says_there_are_none(reader_client, demo, millbrook):
    """The page's table: a row per session of a folded viewer; none yet (millbrook is not
    folded) says so."""
    from memory.active_save import use
    from memory.engine.knowledge import get_viewer
    from memory.engine.saves import get_save
    from memory.selectors.projections import sessions_panel

    hx = {"HTTP_HX_REQUEST": "true"}
    html = reader_client.get("/saves/demo/viewers/npc-tobiah/sessions/", **hx).content.decode()
    with use(get_save("demo")):
        keys = [
            s.session_key for s in sessions_panel(get_viewer("npc-tobiah")).sessions_oldest_first
        ]
    assert keys and html.count('data-session="') == len(keys)
    assert html.index(f'data-session="{keys[0]}"') < html.index(f'data-session="{keys[-1]}"')
    empty = reader_client.get("/saves/millbrook/viewers/ida/sessions/", **hx).content.decode()
    assert '<tr><td colspan="3" class="muted">No sessions.</td></tr>' in empty


# The episodes' timeline and list as viewer.html's loops printed them before they were made in
# Python (markup.timeline_rects, markup.episode_items).
OLD_TIMELINE_LOOP = (
    "{% load inspector %}"
    '{% for bar in sessions.timeline %}<rect class="episode{% if bar.episode.is_open %} open'
    '{% endif %}{% if bar.selected %} selected{% endif %}" x="{{ bar.x }}" y="0" '
    'width="{{ bar.width }}" height="10"><title>Episode {{ bar.episode.ordinal }}: '
    "{{ bar.episode.member_count }} memories, {{ bar.episode.first_at|said:world_years }} – "
    "{{ bar.episode.last_at|said:world_years }}{% if bar.episode.is_open %} (open){% endif %}"
    "</title></rect>{% endfor %}"
)
OLD_EPISODES_LOOP = (
    "{% load inspector %}"
    """{% for item in sessions.episodes %}{% with e=item.e %}
    <li id="episode-{{ e.ordinal }}" value="{{ e.ordinal }}"{% if item.selected %} class="selected" aria-current="true"{% endif %}>{% span e.first_at e.last_at %} · {{ e.member_count }} memor{{ e.member_count|pluralize:"y,ies" }}{% if e.is_open %} <span class="badge">open</span>{% endif %}</li>
    {% endwith %}{% endfor %}"""
)


@pytest.mark.parametrize("text", ["", HOSTILE])
@pytest.mark.parametrize("years", [False, True])
def test_the_episodes_print_what_the_template_loops_printed(text, years):
    from memory.engine.projections.doors import EpisodeItem
    from memory.web.views.viewer_panels import _timeline

    episodes = [
        EpisodeItem(
            ordinal=n + 1,
            first_at=first if n % 3 else first + text,
            last_at=last,
            first_member_id="a",
            last_member_id="b",
            member_count=count,
            is_open=is_open,
        )
        for n, ((first, last), count, is_open) in enumerate(
            itertools.product(SPANS, [1, 2, 40], [False, True])
        )
    ]
    for selected in (None, 1, 7):
        items = [{"e": e, "selected": e.ordinal == selected} for e in episodes]
        bars = _timeline(episodes, selected)
        context = {"sessions": {"episodes": items, "timeline": bars}, "world_years": years}
        assert markup.episode_items(items, years) == Template(OLD_EPISODES_LOOP).render(
            Context(context)
        )
        assert markup.timeline_rects(bars, years) == Template(OLD_TIMELINE_LOOP).render(
            Context(context)
        )
    if text:
        assert "<script>" not in markup.episode_items(items, years) + markup.timeline_rects(
            bars, years
        )
