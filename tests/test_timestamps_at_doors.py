"""World times at the write doors (issue 13, item 3): `remember`, the API and `load_world`
refuse what omnia could not have written; `import_omnia` keeps a row omnia did write with a
time that names no instant, marks it untimed, and the fold keeps it out of time arithmetic."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.engine.clock import timestamp_problem
from memory.engine.errors import InvalidInput
from memory.engine.projections.doors import episodes, sessions
from memory.engine.write_door import remember
from memory.models import BufferEntry
from memory.worlds.ddl import OMNIA_V2_DDL

INTENT = '{"type":"action","content":"waits","actorId":"ann","targetIds":[],"modifiers":[]}'


def omnia_file(path: Path, stamps: list[tuple[str, str]]) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OMNIA_V2_DDL)
    conn.execute(
        "INSERT INTO objects VALUES ('w', 'world', NULL, '2026-07-06T15:10:00.000Z', NULL, NULL, "
        "NULL, NULL)"
    )
    conn.execute("INSERT INTO objects VALUES ('ann', 'entity', 'w', NULL, 'hall', '[]', NULL, 1)")
    conn.executemany(
        "INSERT INTO buffer_entries VALUES (?, 'ann', ?, 'hall', ?, NULL, 0)",
        [(row_id, stamp, INTENT) for row_id, stamp in stamps],
    )
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("2026-07-06T12:38:00.000Z", True),  # toISOString(), what omnia writes
        ("2026-07-06T12:38:00Z", True),
        ("2026-07-06T12:38Z", True),
        ("2026-07-07T09:00:00+09:00", True),
        ("2026-07-06T12:38:00.123456789Z", True),
        ("yesterday evening", False),
        ("2026-07-06", False),  # no time of day
        ("2026-07-06T12:38:00", False),  # no zone: local time to JavaScript
        ("2026-07-06 12:38:00Z", False),
        ("2026-13-06T12:38:00.000Z", False),
        ("2026-02-30T12:00:00.000Z", False),
        ("2026-07-06T24:00:00.000Z", False),
        ("2026-07-06T12:38:00+24:00", False),
        ("", False),
        (1783339200000, False),
    ],
)
def test_a_write_door_accepts_only_what_omnia_could_have_written(value, accepted):
    assert (timestamp_problem(value) is None) is accepted


@pytest.mark.django_db
def test_remember_refuses_a_junk_timestamp_naming_the_field_and_writes_nothing(cast):
    with pytest.raises(InvalidInput) as caught:
        remember(
            "alice",
            {"type": "dialogue", "originalText": "hm", "description": "hm", "actorId": "alice", "targetIds": []},
            timestamp="yesterday evening",
        )  # fmt: skip
    assert (str(caught.value), caught.value.field) == (
        "timestamp: 'yesterday evening' is not an ISO-8601 time with a zone, like "
        "2026-07-06T12:38:00.000Z",
        "timestamp",
    )
    assert not BufferEntry.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_a_junk_timestamp_with_a_422_naming_the_field(
    client, cast, django_user_model
):
    client.force_login(django_user_model.objects.create_user("s", password="pw", is_staff=True))
    r = client.post(
        "/api/saves/cast/viewers/alice/memories",
        {
            "intent": {"type": "action", "content": "w", "actorId": "alice", "targetIds": []},
            "timestamp": "yesterday evening",
        },
        content_type="application/json",
    )
    assert (r.status_code, r.json()) == (
        422,
        {
            "detail": "timestamp: 'yesterday evening' is not an ISO-8601 time with a zone, "
            "like 2026-07-06T12:38:00.000Z",
            "code": "invalid",
            "field": "timestamp",
        },
    )
    assert not BufferEntry.objects.exists()


@pytest.mark.django_db
def test_import_keeps_an_untimed_row_out_of_time_arithmetic(tmp_path, activate_save):
    source = omnia_file(
        tmp_path / "w.sqlite",
        [
            ("r1", "2026-07-06T12:00:00.000Z"),
            ("r2", "yesterday evening"),  # omnia wrote it: kept, but it names no instant
            ("r3", "2026-07-06T12:05:00.000Z"),
            ("r4", "2026-07-06T15:00:00.000Z"),  # more than the 30-minute gap after r3
        ],
    )
    call_command("import_omnia", str(source), stdout=io.StringIO())
    activate_save("w")
    assert list(BufferEntry.objects.order_by("id").values_list("id", "untimed")) == [
        ("r1", False),
        ("r2", True),
        ("r3", False),
        ("r4", False),
    ]
    call_command("run_projections", stdout=io.StringIO())
    assert [
        (s.session_key, s.first_at, s.last_at, s.memory_count) for s in sessions("ann").items
    ] == [("scene:hall", "2026-07-06T12:00:00.000Z", "2026-07-06T15:00:00.000Z", 4)]
    # The untimed row joins the episode open when it came, and glues nothing after it.
    assert [
        (e.ordinal, e.first_at, e.last_at, e.first_member_id, e.last_member_id, e.member_count, e.is_open)
        for e in episodes("ann").items
    ] == [
        (2, "2026-07-06T15:00:00.000Z", "2026-07-06T15:00:00.000Z", "r4", "r4", 1, True),
        (1, "2026-07-06T12:00:00.000Z", "2026-07-06T12:05:00.000Z", "r1", "r3", 3, False),
    ]  # fmt: skip
    out = io.StringIO()
    call_command("render_buffer", "ann", "--format", "jsonl", stdout=out)
    untimed = [json.loads(line) for line in out.getvalue().splitlines() if '"r2"' in line]
    assert untimed == [
        {
            "entry_id": "r2",
            "line": None,
            "undeliverable": "timestamp 'yesterday evening' names no instant",
        }
    ]
    verify = io.StringIO()
    call_command("rebuild_projections", "--verify", stdout=verify)  # exit 0: a rebuild agrees


@pytest.mark.django_db
def test_a_session_of_only_untimed_rows_takes_its_first_real_time_whole(tmp_path, activate_save):
    source = omnia_file(
        tmp_path / "w.sqlite",
        [("r1", "not a time"), ("r2", "2026-07-06T12:05:00.000Z"), ("r3", "later")],
    )
    call_command("import_omnia", str(source), "--fold", stdout=io.StringIO())
    activate_save("w")
    assert [(s.first_at, s.last_at, s.memory_count) for s in sessions("ann").items] == [
        ("2026-07-06T12:05:00.000Z", "2026-07-06T12:05:00.000Z", 3)
    ]
    assert [(e.first_at, e.last_at, e.member_count) for e in episodes("ann").items] == [
        ("2026-07-06T12:05:00.000Z", "2026-07-06T12:05:00.000Z", 3)
    ]


@pytest.mark.django_db
def test_remember_without_a_time_never_stamps_an_imported_clock_that_names_no_instant(
    tmp_path, activate_save
):
    source = omnia_file(tmp_path / "w.sqlite", [("r1", "2026-07-06T12:00:00.000Z")])
    sqlite3.connect(source).execute(
        "UPDATE objects SET clock_iso='dawn' WHERE id='w'"
    ).connection.commit()
    call_command("import_omnia", str(source), stdout=io.StringIO())
    activate_save("w")
    entry = remember("ann", json.loads(INTENT)).entry
    assert entry.timestamp != "dawn"
    assert timestamp_problem(entry.timestamp) is None
