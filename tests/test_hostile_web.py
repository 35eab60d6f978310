"""Hostile input at every page and API route: never a 5xx (issue 14, item 3).

The routes are enumerated from the URLconf, so a route added later is fuzzed too. Each route
gets hostile values in each path parameter (reversed through the URLconf, so ids holding "/"
or "%" travel escaped, and raw in the path as well), in every query parameter any view reads,
and, for the write routes, in every body field. The counts go to test-artifacts/hostile-web.md,
one table per backend.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote, unquote, urlencode

import django.test.client
import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.db import connection
from django.http import QueryDict
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.functional import cached_property

from memory.engine.cursor import encode_cursor
from omnia_site.api import api
from tests.helpers import write

ARTIFACT = Path(__file__).resolve().parent.parent / "test-artifacts" / "hostile-web.md"

HOSTILE = {
    "nul": ["\x00", "alice\x00", "%00"],
    "slash": ["/", "a/b", "../../etc/passwd", "guild/ann"],
    "percent": ["%", "%25", "%2F", "100%", "%zz"],
    "long": ["x" * 10_000, "é" * 10_000],
    "unicode": ["\u202eevil", "\u200b", "👩‍👩‍👧", "e\u0301", "\ufeff", "\uffff", "Ω" * 3],
    "cursor": ["AAAA", "eyJrIjoiYSJ9", "not-a-cursor!", "-1", "9" * 40, "W10=", "e30="]
    # Well-formed cursors (ours in form) carrying hostile values: NUL, a number past any
    # integer column, an id of 10k characters, the wrong types in each position.
    + [
        encode_cursor(values)
        for values in (
            ["\x00", "\x00"],
            ["2026-07-06T12:00:00.000Z", "\x00"],
            [10**30, "m-1"],
            ["m-1", 10**30],
            [-(10**30), -(10**30), -(10**30)],
            ["x" * 10_000, "y"],
            ["2026-07-06T12:00:00.000Z", 0, "m-1"],
            [1.5, None],
            [[], {}],
        )
    ],
}
# In a path an encoded cursor is one more unknown id: the path parameters take every other
# category, and the two cursor values that read as numbers (a path converter could parse
# one), not all sixteen: the run is a third shorter for the same coverage.
PATH_VALUES = {"-1", "9" * 40}
# Every query parameter a page or operation reads.
QUERY_NAMES = (
    "q", "viewer", "kind", "before", "after", "type", "limit", "include_shadowed",
    "known_hash", "mw", "mrq", "mcq", "mr", "mc", "qa", "all_aliases", "world_id", "slug",
    "format",
)  # fmt: skip
# Valid values for each path parameter, so one hostile parameter is tried at a time.
VALID = {
    "save": "cast",
    "rest": "alice/",
    "viewer_id": "alice",
    "target_id": "bob",
    "entry_id": "m-1",
    "slug": "x",
    "action": "cycle",
}
BODY_FIELDS = {
    "memories": ["intent", "timestamp", "location_id", "conversation_id", "outcome", "id"],
    "aliases": ["label"],
    "abstract": ["member_ids", "name", "body", "slug", "expected_generation"],
}


def routes() -> list[tuple[str, dict[str, str]]]:
    """(route template with <name> holes, {name: converter}) for every URL pattern."""
    found: list[tuple[str, dict[str, str]]] = []

    def walk(patterns, prefix: str, names: str) -> None:
        for p in patterns:
            route = str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + route, names)
            elif isinstance(p, URLPattern):
                found.append((prefix + route, dict(re.findall(r"<(?:(\w+):)?(\w+)>", route))))

    walk(get_resolver().url_patterns, "/", "")
    out = []
    for route, _ in found:
        if route.startswith("/admin/") or route.startswith("/static/"):
            continue
        params = {name: conv or "str" for conv, name in re.findall(r"<(?:(\w+):)?(\w+)>", route)}
        out.append((route, params))
    return out


def fill(route: str, values: dict[str, str], *, raw: bool) -> str:
    """The route with its holes filled: escaped as the converter would (raw=False, via the
    converter's to_url), or percent-encoded as a client would type it (raw=True)."""
    from memory.web.converters import IdConverter

    def one(m: re.Match) -> str:
        conv, name = m.group(1), m.group(2)
        value = values[name]
        if raw:
            return quote(value, safe="")
        if conv == "oid":
            value = IdConverter().to_url(value)
        return quote(value, safe="/~:@!$&'()*+,;=")

    path = re.sub(r"<(?:(\w+):)?(\w+)>", one, route)
    return path.replace("^", "").replace("$", "")


def methods_of(route: str) -> list[str]:
    if route.startswith("/api/"):
        if route.endswith(("memories", "abstract", "retract", "cycle", "rebuild", "verify")):
            return ["POST"]
        if "/aliases/<" in route:
            return ["PUT", "DELETE"]
        return ["GET"]
    if "/aliases/<" in route or "/projections/" in route:
        return ["POST"]
    if route.startswith("/accounts/logout"):
        return []  # signing the fuzzer out would fuzz the login redirect from then on
    return ["GET", "HEAD"]


def body_for(route: str, field: str | None, value: str) -> dict:
    if "memories" in route:
        body = {
            "intent": {"type": "dialogue", "originalText": "hi", "description": "hi",
                       "actorId": "alice", "targetIds": []},
            "timestamp": "2026-07-06T12:40:00.000Z",
            "location_id": "tavern-main",
            "conversation_id": "c-1",
        }  # fmt: skip
    elif "abstract" in route:
        body = {"member_ids": ["m-1"], "name": "n", "body": "b", "slug": "s",
                "expected_generation": 0}  # fmt: skip
    elif "aliases" in route:
        body = {"label": "the stranger"}
    else:
        body = {}
    if field is not None:
        body[field] = value
    return body


@pytest.fixture
def hostile_world(cast):
    """The cast, one memory, an entity and an entry whose ids hold "/"."""
    from memory.models import WorldObject

    write("alice", 1, entry_id="m-1", text="hello there")
    WorldObject.objects.create(
        id="guild/ann", type="entity", world_id=cast.world.id, location_id="tavern-main", is_agent=1
    )
    write("guild/ann", 2, entry_id="note/1", text="a line with a slash id")


@pytest.mark.django_db(transaction=True)
def test_no_route_answers_5xx_to_hostile_input(
    client, hostile_world, staff, settings, monkeypatch
) -> None:
    # Two costs that are the same for every request and no part of what is tested here (the
    # input reaches neither): the session lives in the cache, not a table read per request,
    # and the OpenAPI document, the same whatever the query, is built once.
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    monkeypatch.setattr(api, "get_openapi_schema", _built_once(api.get_openapi_schema))
    # Nor is the test client's copy of every template context each response renders (kept for
    # assertions on response.context, which this test never makes): thousands of pages of
    # copies made the run minutes long and gigabytes large.
    monkeypatch.setattr(django.test.client, "store_rendered_templates", _keep_nothing)
    client.force_login(staff)
    table: dict[str, Counter] = {}
    failures: list[str] = []
    all_routes = routes()
    assert len(all_routes) >= 30, all_routes  # the URLconf was walked, API included
    # A read sent twice is the same request (a reversed and a raw path are often the same
    # string): each is sent once. A write is sent again: the second meets the first's effect.
    reads_sent: set[tuple[str, str, str]] = set()
    query_reads = _QueryReads(monkeypatch)
    spellings = (False, True) if connection.vendor == "sqlite" else (False,)
    query_blind: set[tuple[str, str]] = set()

    def tally(category: str, method: str, url: str, status: int, **kw) -> None:
        row = table.setdefault(category, Counter())
        row["attempts"] += 1
        if 400 <= status < 500:
            row["4xx"] += 1
        if status >= 500:
            row["5xx"] += 1
            failures.append(f"{status} {method} {url!r} {kw}")

    def send(
        category: str, method: str, url: str, body: dict | None = None, form: dict | None = None
    ) -> None:
        if method in ("GET", "HEAD") and body is None and form is None:
            # Two spellings of one path (a value the converter and a client escape alike)
            # reach the site as one: Django decodes the path before anything of ours reads it.
            path, _, query = url.partition("?")
            if (method, unquote(path), query) in reads_sent:
                return
            reads_sent.add((method, unquote(path), query))
        call = getattr(client, method.lower())
        if form is not None:
            r = call(url, form)
        elif body is None:
            r = call(url)
        else:
            r = call(url, data=json.dumps(body), content_type="application/json")
        tally(category, method, url, r.status_code, body=body)

    for route, params in all_routes:
        for method in methods_of(route):
            if method == "DELETE" and route.rstrip("/").endswith("saves/<save>"):
                continue  # a valid call removes the save the run stands on (test_api covers it)
            for category, values in HOSTILE.items():
                # HEAD is answered as GET without its body (HeadAsGetMiddleware): GET meets
                # every value, HEAD the first of each category.
                for value in values[:1] if method == "HEAD" else values:
                    # Each path parameter hostile in turn (reversed and raw). How a path is
                    # spelled is Django's URL decoding, the same on every backend: on the
                    # second backend (PostgreSQL) the reversed spelling carries the value to
                    # the database alone.
                    for name in params if category != "cursor" or value in PATH_VALUES else ():
                        filled = {n: VALID.get(n, "x") for n in params}
                        filled[name] = value
                        for raw in spellings:
                            send(category, method, fill(route, filled, raw=raw))
                    base = fill(route, {n: VALID.get(n, "x") for n in params}, raw=False)
                    # Every query parameter hostile at once. A route whose first such request
                    # read nothing of its query string (no request.GET, no QUERY_STRING: not
                    # a middleware, not a redirect's `next`) meets every later query the
                    # same: nothing of ours looks at it. Its query requests stop there.
                    if (method, route) not in query_blind:
                        query = urlencode([(n, value) for n in QUERY_NAMES])
                        read = query_reads.count
                        send(category, method, f"{base}?{query}")
                        if query_reads.count == read:
                            query_blind.add((method, route))
                    # Form fields, for the page forms (the inline alias edit).
                    if method == "POST" and not base.startswith("/api/"):
                        send(category, method, base, form={"label": value, "action": value})
                    # Body fields, for the write routes.
                    if method in ("POST", "PUT") and base.startswith("/api/"):
                        kind = next((k for k in BODY_FIELDS if k in route), None)
                        for fld in BODY_FIELDS.get(kind, []):
                            send(category, method, base, body_for(route, fld, value))
    # The slash-id world renders: overview, its viewer page, its entry page, its buffer panel.
    for url in (
        "/",
        reverse("memory:viewer", args=["cast", "guild/ann"]),
        reverse("memory:entry", args=["cast", "guild/ann", "note/1"]),
        reverse("memory:buffer_panel", args=["cast", "guild/ann"]) + "?qa=1",
        reverse("api:entry", args=["cast", "guild/ann", "note/1"]),
    ):
        r = client.get(url)
        tally("slash", "GET", url, r.status_code)
        assert r.status_code == 200, (url, r.status_code)

    _write_table(table)
    assert not failures, "\n".join(failures[:20])
    assert sum(row["attempts"] for row in table.values()) > 2000


class _QueryReads:
    """Counts the requests whose query string something read: request.GET in any way (every
    attribute of the QueryDict, its items and its keys), or the raw QUERY_STRING (a full
    path, a redirect's `next`). Counting too much only sends more."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        watch = self

        class WatchedQuery(QueryDict):
            def __getattribute__(self, name: str):
                watch.seen()
                return super().__getattribute__(name)

            def __getitem__(self, key):
                watch.seen()
                return super().__getitem__(key)

            def __contains__(self, key) -> bool:
                watch.seen()
                return super().__contains__(key)

            def __iter__(self):
                watch.seen()
                return super().__iter__()

            def __len__(self) -> int:
                watch.seen()
                return super().__len__()

        class WatchedEnviron(dict):
            def __getitem__(self, key):
                if key == "QUERY_STRING":
                    watch.seen()
                return super().__getitem__(key)

            def get(self, key, default=None):
                if key == "QUERY_STRING":
                    watch.seen()
                return super().get(key, default)

        def get(request: WSGIRequest) -> QueryDict:
            return WatchedQuery(
                dict.get(request.environ, "QUERY_STRING", ""), encoding=request._encoding
            )

        built = cached_property(get)
        built.__set_name__(WSGIRequest, "GET")
        monkeypatch.setattr(WSGIRequest, "GET", built)
        init = WSGIRequest.__init__

        def watched_init(request: WSGIRequest, environ: dict) -> None:
            init(request, WatchedEnviron(environ))  # kept as request.environ and META

        monkeypatch.setattr(WSGIRequest, "__init__", watched_init)

    def seen(self) -> None:
        self.count += 1


def _keep_nothing(*_args, **_kwargs) -> None:
    """A template_rendered receiver that stores nothing."""


def _built_once(get_openapi_schema):
    """NinjaAPI.get_openapi_schema, each API root's document built on its first call only."""
    built: dict[str, object] = {}

    def schema(*, path_prefix: str | None = None, path_params: dict | None = None):
        prefix = api.get_root_path(path_params or {}) if path_prefix is None else path_prefix
        if prefix not in built:
            built[prefix] = get_openapi_schema(path_prefix=prefix)
        return built[prefix]

    return schema


def _write_table(table: dict[str, Counter]) -> None:
    """One section per backend in test-artifacts/hostile-web.md, the other kept as it was."""
    vendor = connection.vendor
    sections: dict[str, str] = {}
    if ARTIFACT.exists():
        for part in ARTIFACT.read_text().split("\n## ")[1:]:
            sections[part.split("\n", 1)[0].strip()] = "## " + part.rstrip() + "\n"
    lines = [f"## {vendor}", "", "| category | attempts | 4xx | 5xx |", "| --- | --- | --- | --- |"]
    for category, row in sorted(table.items()):
        lines.append(f"| {category} | {row['attempts']} | {row['4xx']} | {row['5xx']} |")
    total = sum(table.values(), Counter())
    lines.append(f"| **all** | {total['attempts']} | {total['4xx']} | {total['5xx']} |")
    sections[vendor] = "\n".join(lines) + "\n"
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(
        "# Hostile input at every page and API route\n\n"
        "Written by tests/test_hostile_web.py: every route of the URLconf, hostile values in\n"
        "each path parameter, every query parameter and every write body field. 4xx counts\n"
        "refusals; the rest answered 2xx/3xx (a hostile query parameter a page ignores).\n\n"
        + "\n".join(sections[k] for k in sorted(sections))
    )
