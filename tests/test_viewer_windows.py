"""The viewer page's windows (the switcher, the alias table) read only what they show, and
show exactly what reading the whole world and slicing it showed."""

from __future__ import annotations

import json
import random
import re

import pytest

from memory.engine.descriptors import KnownIds, derive_descriptor, descriptor_words
from memory.engine.knowledge import FOLDS_TO_WORD, get_viewer, known_ids_among, world_knowledge
from memory.models import Attribute, WorldObject
from memory.selectors.aliases import alias_page, alias_rows, alias_targets, alias_window
from memory.selectors.viewers import (
    viewer_ids,
    viewer_window_ids,
)

WORD_CHARS = set("abcdefghijklmnopqrstuvwxyz'-")


def test_folds_to_word_is_every_non_ascii_character_that_casefolds_to_word_characters() -> None:
    found = [
        c
        for c in map(chr, range(0x80, 0x110000))
        if c.casefold() and set(c.casefold()) <= WORD_CHARS
    ]
    assert "".join(found) == FOLDS_TO_WORD


def test_descriptor_words_cover_every_id_the_descriptor_looks_up() -> None:
    # The head of a gendered stranger is no word of its attributes: it is looked up too.
    attrs = {"gender": "male", "appearance": "a Tall sailor"}
    assert {"man", "figure", "a", "tall", "sailor", "male"} <= descriptor_words(attrs)
    assert derive_descriptor({"gender": "male"}, KnownIds.of(["man"])) == "an unfamiliar figure"
    assert derive_descriptor({"gender": "male"}, KnownIds()) == "the man"


@pytest.mark.django_db
def test_known_ids_among_matches_a_casefold_of_every_id(save, django_assert_num_queries) -> None:
    WorldObject.objects.create(id="w", type="world")
    WorldObject.objects.create(id="w2", type="world")
    for i in [
        "Sailor",
        "STRASSE",
        "Stra\u00dfe",
        "\u212aelp",
        "ro\ufb05",
        "cloak",
        "d\u00e9j\u00e0",
    ]:
        WorldObject.objects.create(id=i, type="entity", world_id="w")
    WorldObject.objects.create(id="hood", type="entity", world_id="w2")
    words = {"sailor", "strasse", "kelp", "rost", "cloak", "hood", "man"}
    with django_assert_num_queries(1):
        known = known_ids_among("w", words)
    assert known == {"sailor", "strasse", "kelp", "rost", "cloak"}  # hood: another world's
    assert known_ids_among(None, words) == known | {"hood"}
    # Past KNOWN_WORDS_MAX words, every id is read: the same answer.
    many = words | {f"z{'x' * n}" for n in range(600)}
    assert known_ids_among("w", many) == known
    with django_assert_num_queries(0):
        assert known_ids_among("w", []) == set()


def _old_alias_rows(viewer, *, pinned, show_all, limit, strangers):
    """The alias table as the page built it before: the whole world read, then sliced."""
    knowledge = world_knowledge(viewer.obj.world_id)
    targets = alias_targets(viewer, knowledge)
    if not show_all and len(targets) > limit:
        keep = [t for t in targets if t in viewer.aliases or t in pinned]
        picked = set(keep)
        rest = [t for t in targets if t not in picked]
        picked |= set(rest[: max(min(limit - len(keep), strangers), 0)])
        targets = [t for t in targets if t in picked]
    return alias_rows(viewer, knowledge, targets=targets), len(alias_targets(viewer, knowledge))


def _random_world(rng: random.Random, n: int) -> list[str]:
    WorldObject.objects.create(id="w", type="world")
    WorldObject.objects.create(id="elsewhere", type="world")
    WorldObject.objects.create(id="Tavern", type="location", world_id="w")
    WorldObject.objects.create(id="stranger", type="entity", world_id="elsewhere")
    words = ["sailor", "Hood", "cloak", "man", "Tall", "stra\u00dfe", "bosun", "figure"]
    ids = []
    for i in range(n):
        ids.append(rng.choice([f"npc-{i:02d}", f"{rng.choice(words)}{i}", rng.choice(words)]))
    ids = list(dict.fromkeys(ids))
    for i in ids:
        WorldObject.objects.create(
            id=i,
            type="entity",
            world_id="w",
            is_agent=rng.choice([None, 0, 1, 1]),
            aliases_json="[]",
        )
        for name in rng.sample(["appearance", "occupation", "gender", "name"], 2):
            value = " ".join(rng.choices([*words, "a", "dark", "hair", "male", "f"], k=4))
            Attribute.objects.create(
                object_id=i, name=name, value=value, visibility=rng.choice(["PUBLIC", "PRIVATE"])
            )
    return ids


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(12))
def test_alias_window_shows_what_reading_the_whole_world_showed(save, seed) -> None:
    rng = random.Random(seed)
    ids = _random_world(rng, rng.randrange(3, 30))
    viewer_id = rng.choice(ids)
    # Labels: entities of the world, its location (no target), ids of no world, another
    # world's entity, the viewer itself.
    pool = [*ids, "Tavern", "gone-1", "gone-2", "stranger", viewer_id]
    labels = [[t, f"label {n}"] for n, t in enumerate(rng.sample(pool, rng.randrange(0, 8)))]
    WorldObject.objects.filter(id=viewer_id).update(aliases_json=json.dumps(labels))
    viewer = get_viewer(viewer_id)
    for limit, strangers, show_all in [
        (100, 10, False),
        (5, 2, False),
        (3, 0, False),
        (2, 1, True),
    ]:
        pinned = set(rng.sample(pool, 2))
        old, old_total = _old_alias_rows(
            viewer, pinned=pinned, show_all=show_all, limit=limit, strangers=strangers
        )
        window = alias_window(
            viewer, pinned=pinned, show_all=show_all, limit=limit, strangers=strangers
        )
        assert window.rows == old
        assert window.total == old_total


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(6))
def test_alias_pages_laid_end_to_end_are_the_whole_alias_table(save, seed) -> None:
    rng = random.Random(100 + seed)
    ids = _random_world(rng, rng.randrange(3, 30))
    viewer_id = rng.choice(ids)
    pool = [*ids, "Tavern", "gone-1", "gone-2", "stranger", viewer_id]
    labels = [[t, f"label {n}"] for n, t in enumerate(rng.sample(pool, rng.randrange(0, 8)))]
    WorldObject.objects.filter(id=viewer_id).update(aliases_json=json.dumps(labels))
    viewer = get_viewer(viewer_id)
    knowledge = world_knowledge(viewer.obj.world_id)
    whole = alias_rows(viewer, knowledge)
    for size in (1, 3, 7, 100):
        pages = [alias_page(viewer, offset=start, limit=size) for start in range(0, 40, size)]
        assert [row for page in pages for row in page.rows] == whole, size
        assert {page.total for page in pages} == {len(whole)}


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(6))
def test_pages_of_labels_laid_end_to_end_are_every_labelled_row(save, seed) -> None:
    """Past `limit`, the labelled rows come `labels` at a time: the pages hold each labelled
    row once, in alias_targets order, the first page also the strangers it always showed and
    every page the pinned rows."""
    rng = random.Random(200 + seed)
    ids = _random_world(rng, rng.randrange(12, 30))
    viewer_id = rng.choice(ids)
    pool = [*ids, "Tavern", "gone-1", "gone-2", "stranger", viewer_id]
    labels = [[t, f"label {n}"] for n, t in enumerate(rng.sample(pool, rng.randrange(4, 12)))]
    WorldObject.objects.filter(id=viewer_id).update(aliases_json=json.dumps(labels))
    viewer = get_viewer(viewer_id)
    whole = alias_rows(viewer, world_knowledge(viewer.obj.world_id))
    labelled = [r for r in whole if r.label is not None and (r.in_world or r.target_id not in ids)]
    pinned = rng.choice([r.target_id for r in whole if r.label is None])
    for size in (1, 3, 5):
        pages, start = [], 0
        while start is not None:
            page = alias_window(
                viewer, pinned=[pinned], limit=4, strangers=2, labels=size, labels_from=start
            )
            pages.append(page)
            start = page.labels_next
        assert {p.labelled for p in pages} == {len(labelled)}
        assert len(pages) == max(1, -(-len(labelled) // size))
        shown = [[r for r in p.rows if r.label is not None] for p in pages]
        assert [r for rows in shown for r in rows] == labelled, size
        for n, p in enumerate(pages):
            strangers = [r.target_id for r in p.rows if r.label is None]
            assert pinned in strangers
            # the first page: the pinned row and the first other strangers, as many as fit
            others = [r.target_id for r in whole if r.label is None and r.target_id != pinned]
            room = max(min(4 - len(shown[0]) - 1, 2), 0) if n == 0 else 0
            assert set(strangers) == {pinned, *others[:room]}


@pytest.mark.django_db
def test_alias_window_queries_do_not_grow_with_the_world(
    save, django_assert_max_num_queries
) -> None:
    rng = random.Random(5)
    ids = _random_world(rng, 40)
    viewer = get_viewer(ids[0])
    # objects asked about with the entity count and the first strangers, attributes, ACL,
    # known ids, labels that are true names
    with django_assert_max_num_queries(5):
        alias_window(viewer, limit=10, strangers=3)
    for n in range(200):
        WorldObject.objects.create(id=f"more-{n:03d}", type="entity", world_id="w")
    with django_assert_max_num_queries(5):
        window = alias_window(viewer, limit=10, strangers=3)
    assert len(window.rows) == 3 and window.total == len(ids) - 1 + 200


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [1, 2, 4, 50])
def test_viewer_window_ids_is_the_slice_of_every_viewer_id(
    save, limit, django_assert_num_queries
) -> None:
    rng = random.Random(limit)
    ids = _random_world(rng, 25)
    for viewer_id in ids:
        viewer = get_viewer(viewer_id)
        every = viewer_ids("w")
        at = every.index(viewer_id) if viewer_id in every else 0
        start = max(0, min(at - limit // 2, len(every) - limit))
        with django_assert_num_queries(1):
            assert viewer_window_ids(viewer, limit) == (every[start : start + limit], len(every))


# The alias row as viewer.html printed it before the row was made in the view: the reference
# every state of markup.alias_row must print byte for byte.
OLD_ROW_LOOP = """    {% for item in aliases.rows %}
      <tr id="alias-{{ item.dom }}" data-target="{{ item.target }}"{% if item.selected %} class="selected" aria-current="true"{% endif %}>
        <th scope="row">{% if item.named %}<span class="qa-info" title="true name: QA information, never shown to the viewer">{{ item.name }}</span> <code class="id-hint">{{ item.target }}</code>{% else %}{{ item.target }}{% endif %}{% if not item.in_world %} <span class="muted">(not in world)</span>{% endif %}
          <a class="uses-link small" href="{{ item.uses_url }}" hx-get="{{ item.uses_url }}" hx-target="#buffer-panel" hx-swap="outerHTML" hx-push-url="true" aria-label="Buffer lines naming {{ item.name }}">lines</a>{% if item.pair_url %}<br><a class="pair-link small" href="{{ item.pair_url }}">what {{ viewer_name }} remembers of {{ item.person }}</a>{% endif %}</th>
        <td>{% if can_edit %}
          <form class="alias-form" method="post" action="{{ item.edit_url }}" hx-post="{{ item.edit_url }}" hx-target="#aliases-panel" hx-swap="outerHTML">{{ aliases.csrf_input }}
            <label class="visually-hidden" for="label-{{ item.dom }}">Label {{ viewer.name }} uses for {{ item.person }}</label>
            <input id="label-{{ item.dom }}" name="label" value="{{ item.value }}" placeholder="{{ item.shown_as }}"{% if item.errors %} aria-invalid="true" aria-describedby="alias-err-{{ item.dom }}"{% elif item.warnings %} aria-describedby="alias-warn-{{ item.dom }}"{% endif %}>
            <button type="submit" name="action" value="set">Save</button>
            {% if item.label is not None %}<button type="submit" name="action" value="delete" class="secondary" data-confirm="Forget the label “{{ item.label }}” that {{ viewer.name }} uses for {{ item.person }}? Lines about them will use a description again.">Forget</button>{% endif %}
          </form>{% else %}<span class="state-{{ item.state }}">{{ item.shown_as }}</span>{% endif %}
          {% if item.errors %}<ul class="error" id="alias-err-{{ item.dom }}" role="alert">{% for e in item.errors %}<li>{{ e }}</li>{% endfor %}{% if item.rejected is not None %}<li class="muted">Not saved; {{ viewer.name }} still calls them “{{ item.shown_as }}”.</li>{% endif %}</ul>{% endif %}
          {% if item.warnings %}<ul class="warning" id="alias-warn-{{ item.dom }}" role="status">{% for w in item.warnings %}<li>Saved, but: {{ w }}</li>{% endfor %}</ul>{% endif %}{% if item.suspicions %}<ul class="warning suspicious" id="alias-check-{{ item.dom }}">{% for c in item.suspicions %}<li>Check: {{ c }}</li>{% endfor %}</ul>{% endif %}
          <span class="suggestion small muted">suggested: {{ item.suggestion }}{% if item.offer %}
            <form class="alias-suggest" method="post" action="{{ item.edit_url }}" hx-post="{{ item.edit_url }}" hx-target="#aliases-panel" hx-swap="outerHTML">{{ aliases.csrf_input }}<button type="submit" name="action" value="suggest" class="secondary" aria-label="Use “{{ item.suggestion }}” as the label for {{ item.person }}">Use</button></form>{% endif %}</span>
        </td>
        <td><span class="badge state-{{ item.state }}">{{ item.state }}</span></td>
      </tr>
    {% endfor %}"""


def _items():
    hostile = '<b>"Q&A" it\'s \u201cx\u201d</b>'
    base = {
        "target": "bob",
        "name": "Gareth",
        "person": "Gareth",
        "named": True,
        "in_world": True,
        "state": "descriptor",
        "label": "the hooded figure",
        "shown_as": "the hooded figure",
        "suggestion": "the tall man",
        "offer": True,
        "value": "the hooded figure",
        "rejected": None,
        "errors": [],
        "warnings": [],
        "suspicions": (),
        "dom": "bob",
        "edit_url": "/viewers/alice/aliases/bob/",
        "uses_url": "/viewers/alice/buffer/?uses=bob&x=1",
        "pair_url": "/viewers/alice/remembers/bob/?x=1&y=2",
        "selected": False,
    }
    yield base
    yield {
        **base,
        "named": False,
        "name": "bob",
        "person": "the tall man",
        "in_world": False,
        "selected": True,
        "pair_url": "",
    }
    yield {**base, "label": None, "offer": False, "state": "unknown", "value": ""}
    yield {**base, "errors": ["too long", hostile], "rejected": hostile, "value": hostile}
    yield {**base, "errors": ["refused"], "rejected": None}
    yield {**base, "warnings": ["shadows a name", hostile]}
    yield {**base, "suspicions": ("empty label", hostile), "label": " ", "shown_as": "[no label]"}
    yield {key: hostile if isinstance(v, str) else v for key, v in base.items()}


@pytest.mark.parametrize("can_edit", [True, False])
def test_alias_row_html_prints_what_the_template_printed(can_edit) -> None:
    from django.template import Context, Template
    from django.utils.html import format_html
    from django.utils.safestring import mark_safe

    from memory.web.views.markup import alias_row

    csrf = (
        format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', "t0k&n")
        if can_edit
        else ""
    )
    items = list(_items())
    viewer_name = "Al<i>ce & co"
    context = {"aliases": {"rows": items, "csrf_input": csrf}, "viewer": {"name": viewer_name}}
    context["can_edit"] = can_edit
    context["viewer_name"] = viewer_name
    before = Template(OLD_ROW_LOOP).render(Context(context))
    rows = [{"html": mark_safe(alias_row(i, viewer_name, can_edit, csrf))} for i in items]
    loop = "    {% for item in aliases.rows %}\n      {{ item.html }}\n    {% endfor %}"
    after = Template(loop).render(Context({"aliases": {"rows": rows}}))
    assert after == before


OLD_SWITCH_LOOP = (
    "{% for v in links %}\n"
    '      <li><a href="{{ v.url }}" hx-get="{{ v.url }}" hx-target="#viewer-panels" '
    'hx-swap="outerHTML" hx-push-url="true" data-viewer-id="{{ v.id }}"'
    '{% if v.current %} aria-current="page"{% endif %}>{{ v.name }}'
    '{% if v.named %} <code class="id-hint">{{ v.id }}</code>{% endif %}</a></li>\n'
    "      {% endfor %}"
)


def test_switch_link_html_prints_what_the_template_printed() -> None:
    from django.template import Context, Template
    from django.utils.safestring import mark_safe

    from memory.web.views.markup import switch_link

    hostile = '<b>"Q&A" it\'s</b>'
    links = [
        {"id": "npc-1", "name": "Pip", "named": True, "url": "/viewers/npc-1/", "current": True},
        {
            "id": "npc-2",
            "name": "npc-2",
            "named": False,
            "url": "/viewers/npc-2/",
            "current": False,
        },
        {"id": hostile, "name": hostile, "named": True, "url": "/v/?a=1&b=2", "current": False},
    ]
    before = Template(OLD_SWITCH_LOOP).render(Context({"links": links}))
    rows = [{"html": mark_safe(switch_link(link))} for link in links]
    loop = "{% for v in links %}\n      {{ v.html }}\n      {% endfor %}"
    assert Template(loop).render(Context({"links": rows})) == before


@pytest.mark.django_db
def test_acl_rows_are_read_only_for_objects_with_a_guarded_attribute(
    cast, django_assert_num_queries
) -> None:
    from memory.engine.knowledge import WorldKnowledge, load_attributes

    public = WorldKnowledge(world_id="tavern", objects={}, attributes={}, acl={})
    with django_assert_num_queries(1):  # the tavern's attributes, no ACL: all are PUBLIC
        load_attributes(public, ["tavern"])
    assert public.visible_attributes("alice", "tavern") == {"name": "The Rusty Flagon"}
    guarded = WorldKnowledge(world_id="tavern", objects={}, attributes={}, acl={})
    with django_assert_num_queries(2):
        load_attributes(guarded, ["alice", "bob"])
    assert guarded.acl == {("bob", "name"): {"charlie"}, ("bob", "weapon"): {"charlie"}}
    assert guarded.visible_attributes("charlie", "bob")["name"] == "Gareth"
    assert "name" not in guarded.visible_attributes("alice", "bob")


@pytest.mark.django_db
def test_viewer_page_queries_do_not_grow_with_the_world(
    cast, client, django_user_model, django_assert_max_num_queries
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(
        django_user_model.objects.create_user("ann", password="pw", is_superuser=True)
    )

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/saves/cast/viewers/alice/").status_code == 200
        return len(ctx.captured_queries)

    for n in range(30):
        WorldObject.objects.create(id=f"crowd-{n:03d}", type="entity", world_id="tavern")
    small = page_queries()
    for n in range(30, 400):
        WorldObject.objects.create(id=f"crowd-{n:03d}", type="entity", world_id="tavern")
        Attribute.objects.create(object_id=f"crowd-{n:03d}", name="name", value=f"Crowd {n}")
    with django_assert_max_num_queries(small):
        body = client.get("/saves/cast/viewers/alice/").content.decode()
    assert "390 more entities this viewer has no name for." in body  # 402 targets, 12 shown


@pytest.mark.django_db
def test_the_viewer_page_looks_its_viewer_up_once(cast, client, django_user_model) -> None:
    """The page reads its viewer once and hands it to the doors (sessions, digest, episodes,
    faces), which then neither check it exists nor read it again."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(
        django_user_model.objects.create_user("ann", password="pw", is_superuser=True)
    )
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/saves/cast/viewers/alice/").status_code == 200
    # The ORM's forms, and knowledge.get_viewer's own (active_save.scoped_instances).
    lookups = [
        q["sql"]
        for q in ctx.captured_queries
        if q["sql"].startswith(
            ('SELECT 1 AS "a" FROM "objects"', 'SELECT "objects"."uid"', "SELECT uid, ")
        )
        and re.search(r"(\"objects\"\.\"id\"| id) = 'alice'", q["sql"])
    ]
    assert len(lookups) == 1, lookups
