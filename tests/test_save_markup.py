"""save_markup.viewer_items prints what save.html's loop printed, tag for tag and escape for
escape (only the whitespace between tags differs), hostile text included."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template

from memory.selectors.viewers import Entity
from memory.web.views.save_markup import viewer_items

OLD_VIEWER_ITEMS = (
    "{% for v, url in viewers %}\n"
    '    <li><a href="{{ url }}">{{ v.name }}</a><br><span class="muted small">{% if v.named %}'
    '<code class="id-hint">{{ v.id }}</code> · {% endif %}{{ v.world_id }}</span></li>\n'
    "    {% endfor %}"
)

HOSTILE = '<script>alert("x")</script> & it\'s'


def _tags(text: str) -> str:
    return re.sub(r">\s+<", "><", text).strip()


@pytest.mark.parametrize("world", ["harbour", HOSTILE, None])
def test_viewer_items_print_what_the_template_printed(world) -> None:
    entities = [
        (Entity(id="npc-1", name="Gareth", world_id=world, location_id=None, is_agent=True), "/a"),
        (Entity(id=HOSTILE, name=HOSTILE, world_id=world, location_id=None, is_agent=None), "/b"),
        (Entity(id="v2", name=HOSTILE, world_id=world, location_id="x", is_agent=True), '/c?"&'),
    ]
    before = Template(OLD_VIEWER_ITEMS).render(Context({"viewers": entities}))
    after = Template("{{ items }}").render(Context({"items": viewer_items(entities)}))
    assert _tags(after) == _tags(before)
    assert "<script>" not in after and after.count("<li>") == 3
    assert after.count('class="id-hint"') == 2  # the two whose name is not their id


def test_no_entity_is_no_item() -> None:
    assert viewer_items([]) == ""
