"""Opening every page and every API read leaves every table exactly as it was."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

from memory.engine.projections import run_cycle
from memory.engine.write_door import remember
from memory.models import WorldObject
from memory.tokens import issue_token


def snapshot() -> dict[str, list]:
    tables = sorted(connection.introspection.table_names())
    rows = {}
    with connection.cursor() as cursor:
        for table in tables:
            if table == "django_session":
                continue  # login itself writes a session; that is the test's doing, not a read's
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows[table] = sorted(repr(r) for r in cursor.fetchall())
    return rows


@pytest.fixture
def folded_tavern(cast):
    """The cast, alice's three memories of bob waving and charlie's reply, folded: the reply."""
    for minute in range(3):
        remember(
            "alice",
            {
                "type": "action",
                "originalText": "x",
                "description": f"waved {minute}",
                "actorId": "bob",
                "targetIds": [],
            },
            timestamp=f"2026-07-06T12:0{minute}:00.000Z",
        )
    entry = remember(
        "alice",
        {
            "type": "dialogue",
            "originalText": "Hi",
            "description": "Hi",
            "actorId": "charlie",
            "targetIds": ["alice"],
        },
        timestamp="2026-07-06T12:05:00.000Z",
    ).entry
    run_cycle()
    return entry


@pytest.fixture
def demo_a_row_behind(demo):
    """The demo world, folded, then one memory of npc-pip's written and not folded."""
    remember(
        "npc-pip",
        {
            "type": "action",
            "originalText": "x",
            "description": "waited",
            "actorId": "npc-pip",
            "targetIds": [],
        },
    )  # leaves one row unfolded


def test_reading_the_long_term_prompt_and_leak_pages_writes_nothing(
    client, demo_a_row_behind, staff
) -> None:
    _token, raw = issue_token(staff, "reader")
    client.force_login(staff)
    before = snapshot()
    pages = [
        "/",
        "/saves/demo/viewers/npc-tobiah/",
        "/saves/demo/viewers/npc-tobiah/faces/",
        "/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1",
        "/saves/demo/viewers/npc-tobiah/sessions/",
        "/saves/demo/viewers/npc-tobiah/entries/ltm-tobiah-01/",
        "/saves/demo/viewers/npc-tobiah/entries/abs-tobiah-signal-nights/",
        "/saves/demo/viewers/npc-tobiah/entries/m-b11-tobiah/",
        "/saves/demo/viewers/npc-pip/prompt/",
        "/saves/demo/leaks/",
        "/saves/demo/leaks/?viewer=npc-pip&kind=unknown_name",
        "/saves/demo/leaks/?format=csv",
        "/saves/demo/leaks/?format=json",
        "/saves/demo/leaks.csv",
        "/saves/demo/leaks.json",
    ]
    for url in pages:
        assert client.get(url).status_code == 200, url
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 200, url
    api = [
        "/api/saves/demo/viewers/npc-pip/sessions",
        "/api/saves/demo/viewers/npc-pip/digest",
        "/api/saves/demo/viewers/npc-pip/digest?known_hash=abc",
        "/api/saves/demo/viewers/npc-pip/episodes",
        "/api/saves/demo/viewers/npc-tobiah/faces",
        "/api/saves/demo/viewers/npc-tobiah/faces?include_shadowed=true",
        "/api/saves/demo/viewers/npc-tobiah/long-term/ltm-tobiah-01",
        "/api/saves/demo/viewers/npc-tobiah/search?q=signal&include_shadowed=true",
        "/api/saves/demo/viewers/npc-oswin/resolve?slug=oswin/the-lighthouse",
        "/api/saves/demo/viewers/npc-pip/prompt",
        "/api/saves/demo/leaks",
        "/api/saves/demo/leaks?viewer=npc-pip&kind=unknown_name",
    ]
    for url in api:
        assert client.get(url).status_code == 200, url
        assert client.get(url, headers={"Authorization": f"Bearer {raw}"}).status_code == 200, url
    # verify is a POST door, but it only compares: it must not write either
    assert client.post("/api/saves/demo/projections/verify").status_code == 200
    assert (
        client.post("/saves/demo/projections/verify/", headers={"HX-Request": "true"}).status_code
        == 200
    )
    assert snapshot() == before


def test_reading_every_page_and_api_read_writes_nothing(client, folded_tavern, root) -> None:
    entry = folded_tavern
    _token, raw = issue_token(root, "reader")
    client.force_login(root)
    before = snapshot()
    pages = [
        "/",
        "/?q=a",  # several matches: one would redirect to its viewer
        "/saves/cast/",
        "/saves/cast/?q=a",
        "/saves/cast/delete/",  # the confirm page only reads
        "/saves/cast/viewers/alice/",
        "/saves/cast/viewers/bob/",
        "/saves/cast/viewers/alice/aliases/",
        "/saves/cast/viewers/alice/buffer/",
        "/saves/cast/viewers/alice/buffer/?qa=1&type=action&q=waved",
        "/saves/cast/viewers/alice/buffer/?uses=bob",
        f"/saves/cast/viewers/alice/?line={entry.id}",
        "/saves/cast/viewers/alice/sessions/",
        "/saves/cast/viewers/alice/faces/",
        f"/saves/cast/viewers/alice/entries/{entry.id}/",
        "/admin/",
        "/admin/memory/entity/",
        f"/admin/memory/entity/{WorldObject.objects.get(id='alice').uid}/change/",
        "/admin/memory/bufferentry/",
        f"/admin/memory/bufferentry/{entry.uid}/change/",
        "/admin/memory/aliaschange/",
        "/admin/memory/auditlog/",
    ]
    for url in pages:
        assert client.get(url).status_code == 200, url
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 200, url
    # An old URL is a redirect into the save that holds the id: it reads only.
    assert client.get("/viewers/alice/").url == "/saves/cast/viewers/alice/"
    api = [
        "/api/saves",
        "/api/saves/cast",
        "/api/saves/cast/entities",
        "/api/saves/cast/viewers/alice/aliases",
        "/api/saves/cast/viewers/alice/buffer",
        "/api/saves/cast/viewers/alice/buffer?type=dialogue&q=hi&limit=1",
        f"/api/saves/cast/viewers/alice/entries/{entry.id}",
        "/api/openapi.json",
    ]
    for url in api:
        assert client.get(url).status_code == 200, url
        assert client.get(url, headers={"Authorization": f"Bearer {raw}"}).status_code == 200, url
    assert snapshot() == before
    # every model's table was in the snapshot
    for model in apps.get_app_config("memory").get_models():
        assert model._meta.db_table in before
