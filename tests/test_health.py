"""/healthz: no login, no writes, 200 with the projection lag while the database answers,
503 JSON when it does not, and back to 200 on the next request once it answers again."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from memory.engine.projections import run_cycle
from memory.engine.shards import shard_count
from tests.helpers import write


def test_healthz_ok_needs_no_login_and_reports_lag(client, cast):
    for i in range(5):
        write(("alice", "bob", "charlie")[i % 3], i)
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r["Content-Type"] == "application/json"
    assert "no-cache" in r["Cache-Control"]
    body = r.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["database"]["vendor"] == connection.vendor
    assert body["projection_lag_rows"] == 5
    assert len(body["shards"]) == shard_count()
    run_cycle()
    assert client.get("/healthz").json()["projection_lag_rows"] == 0


def test_healthz_never_writes(client, cast):
    write("alice", 1)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/healthz").status_code == 200
    statements = [q["sql"].lstrip().split()[0].upper() for q in queries]
    assert set(statements) <= {"SELECT", "SAVEPOINT", "RELEASE"}, statements


def test_healthz_refuses_other_methods(client, db):
    assert client.post("/healthz").status_code == 405


class DatabaseDown:
    """The database stops answering: the open connection is dropped and every new connection
    attempt is refused, as with a closed port (Django connects again on the next query)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def __enter__(self) -> DatabaseDown:
        def refuse(*args, **kwargs):
            raise OperationalError('connection to server at "127.0.0.1", port 1 failed: refused')

        connection.close()
        self.monkeypatch.setattr(connection, "get_new_connection", refuse)
        return self

    def __exit__(self, *exc: object) -> None:
        self.monkeypatch.undo()


@pytest.mark.django_db(transaction=True)
def test_database_unreachable_is_a_503_json_then_recovers_without_restart(client, monkeypatch):
    assert client.get("/healthz").status_code == 200
    with DatabaseDown(monkeypatch):
        r = client.get("/healthz")
        assert r.status_code == 503
        body = r.json()
        assert body["status"] == "error"
        assert body["database"]["ok"] is False
        assert body["database"]["error"] == "OperationalError"
        assert body["projection_lag_rows"] is None
        # The JSON names no host, port or password.
        assert "127.0.0.1" not in r.content.decode()
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


@pytest.mark.django_db(transaction=True)
def test_database_unreachable_pages_and_api_say_503_then_recover(
    client, monkeypatch, cast, django_user_model
):
    from memory.tokens import issue_token

    user = django_user_model.objects.create_user("reader", password="pw")
    raw = issue_token(user, "ci")[1]
    client.force_login(user)
    assert client.get("/saves/cast/viewers/alice/").status_code == 200
    with DatabaseDown(monkeypatch):
        page = client.get("/saves/cast/viewers/alice/")
        assert page.status_code == 503
        assert b"Service unavailable" in page.content
        assert b"Traceback" not in page.content
        api = client.get("/api/saves/cast/entities", HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert api.status_code == 503
        assert api.json() == {
            "detail": "The database is unavailable right now. Try again in a moment.",
            "code": "unavailable",
            "field": None,
        }
    assert client.get("/saves/cast/viewers/alice/").status_code == 200
    assert (
        client.get("/api/saves/cast/entities", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code
        == 200
    )


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a real closed port, PostgreSQL only")
@pytest.mark.django_db(transaction=True)
def test_postgres_on_a_closed_port_is_a_503_then_recovers(client):
    assert client.get("/healthz").status_code == 200
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["PORT"] = 1  # nothing listens there: connection refused
    connection.settings_dict.setdefault("OPTIONS", {})["connect_timeout"] = 2
    try:
        r = client.get("/healthz")
        assert r.status_code == 503
        assert r.json()["status"] == "error"
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
    assert client.get("/healthz").status_code == 200
