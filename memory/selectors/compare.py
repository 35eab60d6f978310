"""The compare page and its JSON twin read the same thing: the query's parameters checked
once here, then the engine's comparison (memory/engine/compare/) as a dict.

The parameters are the command's: `a` and `b` are two saves (with `viewer`, one viewer;
without, every viewer both hold), or, with `save`, two viewers in that save; viewers by id
or by name. A page never writes, so nothing is folded or rescanned here: a save with
unfolded rows is said so, and a viewer whose stored findings are behind is scanned in memory.

A page and an API answer are bounded (issue 29 item 4): a page of viewers, a page of
differing lines per viewer, a line cut past `LINE_CHARS`, every other list cut at
`LISTED` (its total kept), and `SECONDS` of merging. The answer says what it left out and
carries the parameters of the next and previous pages (`pages`): the API pages with cursors
rather than streaming one body, so a client can stop, resume, and never holds 100 MB; the
command (`manage.py compare`) gives all of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory import inputs
from memory.active_save import use
from memory.engine.compare import Budget, compare_saves, compare_viewers
from memory.engine.compare.parts import names_in
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.saves import get_save, live_saves
from memory.selectors.leaks import named_reason
from memory.selectors.viewers import viewer_window

PARAMS = ("a", "b", "viewer", "save")
PAGING = ("viewers_from", "lines_from")
# Longer than any id or save name people type; a longer value names nothing.
MAX_PARAM = 1000
VIEWERS = 5  # viewers compared per page (every viewer of two saves)
LINES = 50  # differing lines per viewer per page
LINE_CHARS = 2000
LISTED = 50  # aliases, sessions, episodes, findings, attributes listed per kind
SECONDS = 5.0  # merging per request (a 1M-row save once took 69 s and 110 MB)
KIND_WORDS = {
    "system_id": "a system id",
    "unknown_name": "a name they do not know",
    "private_attribute": "something private",
}
CHOICES = 300  # names offered in the form's list (any other name typed is still found)


def params_of(query: Mapping[str, Any]) -> dict[str, str]:
    """The non-empty parameters, stripped; InvalidInput (naming the field) for NUL or a
    value no save or id could be, or a page offset that is not a whole number."""
    found: dict[str, str] = {}
    for name in (*PARAMS, *PAGING):
        raw = query.get(name)
        value = (inputs.text(raw if isinstance(raw, str) else None, name) or "").strip()
        if len(value) > MAX_PARAM:
            raise InvalidInput(f"{name} is longer than {MAX_PARAM} characters", field=name)
        if name in PAGING and value and inputs.whole_number(value, 9) is None:
            raise InvalidInput(f"{name} is a whole number from 0", field=name)
        if value and not (name in PAGING and int(value) == 0):
            found[name] = value
    return found


def _offset(params: Mapping[str, str], name: str) -> int:
    return int(params.get(name) or 0)


def page_budget(params: Mapping[str, str]) -> Budget:
    return Budget(
        seconds=SECONDS,
        lines=LINES,
        skip=_offset(params, "lines_from"),
        line_chars=LINE_CHARS,
        viewers=VIEWERS,
        viewer_skip=_offset(params, "viewers_from"),
    )


def comparison(params: Mapping[str, str], budget: Budget | None = None) -> dict[str, Any]:
    """The comparison the parameters ask for, as the engine's `as_dict()` (bounded by
    `budget`, everything without one)."""
    for name in ("a", "b"):
        if not params.get(name):
            what = "viewer" if params.get("save") else "save"
            raise InvalidInput(f"{name} is required: the {what} to compare", field=name)
    if params.get("save"):
        if params.get("viewer"):
            raise InvalidInput(
                "viewer compares two saves; with save, a and b are the two viewers",
                field="viewer",
            )
        return compare_viewers(params["save"], params["a"], params["b"], budget=budget).as_dict()
    return compare_saves(params["a"], params["b"], params.get("viewer"), budget=budget).as_dict()


def _cut(holder: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Each list at `keys` cut to `LISTED`, its length kept in `holder["counts"]`."""
    counts = holder.setdefault("counts", {})
    for key in keys:
        items = holder.get(key)
        if isinstance(items, list):
            counts[key] = len(items)
            holder[key] = items[:LISTED]


def _lines_pages(params: Mapping[str, str], buffer: dict, viewer: str | None) -> None:
    """The parameters of the previous and next page of one buffer's differing lines."""
    shown = len(buffer["only_a"]) + len(buffer["only_b"]) + len(buffer["changed"])
    start = buffer["shown_from"]
    buffer["shown"] = shown
    base = {k: v for k, v in params.items() if k in PARAMS}
    if viewer is not None:
        base["viewer"] = viewer
    # Offsets, not a resumable position: a page the time ran out before reaching has no
    # next page (the same link would run out again); it says to narrow or use the command.
    more = start + shown < buffer["differences"] or not buffer["complete"]
    buffer["next_lines"] = {**base, "lines_from": str(start + shown)} if more and shown else None
    buffer["prev_lines"] = (
        {**base, **({"lines_from": str(max(0, start - LINES))} if start > LINES else {})}
        if start
        else None
    )


def _whole(buffer: dict[str, Any]) -> bool:
    """Whether this answer holds all of a buffer's differences."""
    return buffer["complete"] and not buffer["next_lines"] and not buffer["prev_lines"]


def bounded(params: Mapping[str, str], result: dict[str, Any]) -> dict[str, Any]:
    """A page's or an API call's copy: long lists cut with their totals kept, and the
    parameters of the pages before and after (`pages`, and each buffer's `next_lines`)."""
    result["complete"] = True
    if result["mode"] == "viewers":
        _cut(result, ("private_only_a", "private_only_b", "sessions_only_a", "sessions_only_b"))
        _cut(result["aliases"], ("only_a", "only_b", "changed", "same"))
        _lines_pages(params, result["memories"], None)
        result["complete"] = _whole(result["memories"])
        return result
    _cut(result, ("viewers_only_a", "viewers_only_b"))
    for v in result["viewers"]:
        _cut(v["aliases"], ("only_a", "only_b", "changed", "same"))
        for part in ("sessions", "episodes"):
            if v[part] is not None:
                _cut(v[part], ("added", "gone", "changed"))
        _cut(v["leaks"], ("new", "fixed", "unchanged"))
        one = params.get("viewer") or v["viewer"]["id"]
        _lines_pages(params, v["buffer"], one)
        result["complete"] = result["complete"] and _whole(v["buffer"])
    start, shown, total = result["viewers_from"], len(result["viewers"]), result["viewers_total"]
    result["viewers_shown"] = shown
    base = {k: v for k, v in params.items() if k in PARAMS}
    result["pages"] = {
        "next_viewers": {**base, "viewers_from": str(start + shown)}
        if start + shown < total
        else None,
        "prev_viewers": (
            {**base, **({"viewers_from": str(start - VIEWERS)} if start > VIEWERS else {})}
            if start
            else None
        ),
    }
    result["complete"] = result["complete"] and start + shown >= total
    return result


def _named_ids(value: Any, into: dict[str, str]) -> dict[str, str]:
    """Every person or place the comparison names ({"id", "name"} anywhere in it)."""
    if isinstance(value, dict):
        if isinstance(value.get("id"), str) and isinstance(value.get("name"), str):
            into.setdefault(value["id"], value["name"])
        for item in value.values():
            _named_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            _named_ids(item, into)
    return into


def with_reasons_by_name(result: dict[str, Any]) -> dict[str, Any]:
    """The page's copy of a comparison: each leak finding's reason also by name (from the
    names the comparison already carries; the JSON twin keeps the engine's ids)."""
    names = _named_ids(result, {})
    for section in result.get("viewers", []):
        viewer_id = section["viewer"]["id"]
        for state in ("new", "fixed", "unchanged"):
            for finding in (section.get("leaks") or {}).get(state, []):
                finding["reason_named"] = named_reason({"viewer_id": viewer_id, **finding}, names)
                finding["kind_words"] = KIND_WORDS.get(finding["kind"], finding["kind"])
                who = names.get(finding.get("entity_id") or "")
                # A system id is a string no one reads: the page says whose it is.
                finding["shown"] = (
                    f"{who}’s id" if finding["kind"] == "system_id" and who else finding["text"]
                )
    return result


def save_names() -> list[str]:
    """The saves the form offers."""
    return [s.name for s in live_saves()]


def viewer_choices(params: Mapping[str, str]) -> list[str]:
    """The names the form's viewer fields offer (a datalist: the browser searches it as one
    types): the viewers of the saves in the query, else of the first save, by name, at most
    `CHOICES`; a name two of them share is offered as "name (id)"."""
    wanted = [params[k] for k in ("save", "a", "b") if params.get(k)]
    names = [n for n in wanted if n in save_names()] or save_names()[:1]
    found: dict[str, set[str]] = {}
    shared: set[str] = set()  # names two viewers of one save share
    for name in dict.fromkeys(names):
        try:
            save = get_save(name)
        except NotFound:
            continue
        with use(save):
            agents = [e.id for e in viewer_window(limit=CHOICES)[0] if e.agent]
        called = names_in(save, agents)
        in_save: dict[str, int] = {}
        for i in agents:
            found.setdefault(called.get(i, i), set()).add(i)
            in_save[called.get(i, i)] = in_save.get(called.get(i, i), 0) + 1
        shared.update(n for n, count in in_save.items() if count > 1)
    offered = []
    for name, ids in sorted(found.items(), key=lambda item: item[0].casefold()):
        offered += [f"{name} ({i})" for i in sorted(ids)] if name in shared else [name]
    return offered[:CHOICES]
