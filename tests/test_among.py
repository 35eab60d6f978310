"""`active_save.among`, the condition every raw read of a list of ids writes: it matches the
values given and nothing else, whatever characters they hold (on PostgreSQL a text[] literal
the inspector quotes itself, active_save.text_array)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.active_save import among, scoped_rows
from memory.models import WorldObject

# What an id can hold in both stores: any character but NUL (PostgreSQL's text refuses it).
IDS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
HOSTILE = ['a"b', "c,d", "x y", "{z}", "NULL", "", "back\\slash", '\\"', "it's", "d\u00e9j\u00e0"]


def _matched(values: list[str]) -> list[str]:
    condition, params = among("id", values)
    rows = scoped_rows(
        f"SELECT id FROM objects WHERE game_save_id = %(save)s AND {condition}", params
    )
    return sorted(i for (i,) in rows)


@pytest.mark.django_db
def test_among_matches_exactly_the_ids_given(save) -> None:
    for i in [*HOSTILE, "plain", "other"]:
        WorldObject.objects.create(id=i, type="entity")
    assert _matched(HOSTILE) == sorted(HOSTILE)
    assert _matched(["plain", "missing"]) == ["plain"]
    assert _matched([]) == []


@pytest.mark.django_db
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stored=st.lists(IDS, unique=True, max_size=8), asked=st.lists(IDS, max_size=8))
def test_among_of_any_text_is_set_membership(save, stored, asked) -> None:
    WorldObject.objects.all().delete()
    for i in stored:
        WorldObject.objects.create(id=i, type="entity")
    assert _matched(asked) == sorted(set(stored) & set(asked))
