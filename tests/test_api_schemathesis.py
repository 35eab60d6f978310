"""schemathesis over /api/openapi.json: no 5xx, documented statuses only, one error shape."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import status_code_conformance

from omnia_site.api import api
from omnia_site.wsgi import application

# Building the schema reads no table, so it can load at import, before any database exists.
# Read from the API object: /api/openapi.json answers signed-in accounts only.
schema = schemathesis.openapi.from_dict(api.get_openapi_schema(path_prefix="/api/"))
schema.app = application


@pytest.fixture
def token(cast, django_user_model) -> str:
    from memory.engine.write_door import remember
    from memory.tokens import issue_token

    remember(
        "alice",
        {
            "type": "action",
            "originalText": "x",
            "description": "opened the wooden chest",
            "actorId": "bob",
            "targetIds": [],
        },
        timestamp="2026-07-06T12:03:00.000Z",
    )
    staff = django_user_model.objects.create_user("fuzz", password="pw", is_staff=True)
    return issue_token(staff, "schemathesis")[1]


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms(case, token) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
    response = case.call()
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    )
    if response.status_code in (400, 401, 403, 404, 409, 422):
        body = response.json()
        assert set(body) == {"detail", "code", "field"}, body
    case.validate_response(response, checks=[status_code_conformance])
