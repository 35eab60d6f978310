"""The leak triage queue across every save (issue 28 item 1): facets, bulk accept / reopen with
one reason, "allow this word for this id" — each confirmed in place with an undo — and the
list of allow rules, revocable. Readers see the queue; editors act."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from memory import inputs, services
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.roles import EDIT_PERMISSION, READ_PERMISSION
from memory.selectors import triage as triage_reads
from memory.web.views import leak_rows, markup
from memory.web.views._common import render_page, reverse_each, wants_fragment

FILTER_PREFIX = "filter_"
# Findings one bulk action may name: a page shows PAGE_SIZE, "select all" takes that page.
MAX_KEYS = triage_reads.MAX_PAGE_SIZE


def _filters(source, prefix: str = "") -> triage_reads.QueueFilters:
    """The queue's facets as given (GET for the page; a POST carries the page's copy)."""
    found: dict[str, str] = {}
    for name in triage_reads.FACETS:
        try:
            value = (inputs.text(source.get(prefix + name), name) or "").strip()
        except InvalidInput as exc:
            raise BadRequest(str(exc)) from None
        if value:
            found[name] = value
    try:
        return triage_reads.QueueFilters(**found)
    except InvalidInput as exc:
        raise BadRequest(str(exc)) from None


def _cursor(source, name: str = "cursor") -> str | None:
    try:
        return (inputs.text(source.get(name), name) or "").strip() or None
    except InvalidInput as exc:
        raise BadRequest(str(exc)) from None


def _key_value(item: dict) -> str:
    """A finding's key as a checkbox carries it: JSON, so any text survives the round trip."""
    return json.dumps(
        [item["save"], item["viewer_id"], item["section"], item["kind"], item["text"]],
        ensure_ascii=False,
    )


def _keys(request: HttpRequest) -> list[services.QueueKey]:
    """The findings a bulk action names: each a JSON list of five strings, at most MAX_KEYS;
    anything else is a 400 naming the field."""
    raw = request.POST.getlist("key")
    if not raw:
        raise InvalidInput("choose at least one finding", field="key")
    if len(raw) > MAX_KEYS:
        raise BadRequest(f"key: at most {MAX_KEYS} findings at once")
    keys = []
    for value in raw:
        try:
            key = json.loads(inputs.text(value, "key") or "")
        except (ValueError, InvalidInput):
            raise BadRequest("key: not a finding this page handed out") from None
        if not (isinstance(key, list) and len(key) == 5 and all(isinstance(k, str) for k in key)):
            raise BadRequest("key: not a finding this page handed out")
        keys.append(tuple(key))
    return list(dict.fromkeys(keys))


def _context(
    request: HttpRequest, filters: triage_reads.QueueFilters, cursor: str | None
) -> dict[str, Any]:
    try:
        page = triage_reads.queue(filters, cursor=cursor)
    except InvalidInput as exc:  # a cursor we did not hand out
        raise BadRequest(str(exc)) from None
    base = reverse("memory:triage")
    pairs = filters.as_pairs()
    prompt_urls: dict[str, dict[str, str]] = {}
    for item in page.items:
        prompt_urls.setdefault(item["save"], {})[item["viewer_id"]] = ""
    for save, viewers in prompt_urls.items():
        viewers.update(reverse_each("memory:prompt", [save], list(viewers), reverse=reverse))
    can_edit = request.user.has_perm(EDIT_PERMISSION)
    csrf = markup.csrf_input(get_token(request)) if can_edit and page.items else ""
    # What the rows' forms carry back: the include the page's other forms print.
    hidden = mark_safe(
        render_to_string("memory/_triage_filters.html", {"filters": dict(pairs), "cursor": cursor})
    )
    allow_url = reverse("memory:triage_allow")
    rows_html = []
    for n, item in enumerate(page.items, 1):
        item["key"] = _key_value(item)
        item["prompt_url"] = prompt_urls[item["save"]][item["viewer_id"]]
        rows_html.append(
            leak_rows.triage_row(
                item, n, can_edit=can_edit, csrf=csrf, filters=hidden, allow_url=allow_url
            )
        )
    facets = []
    for facet in page.facets:
        chosen = getattr(filters, facet.name)
        values = list(facet.values)
        if chosen is not None and chosen not in {v for v, _w, _n in values}:
            # A value with no finding left under the other facets still shows, at 0, so the
            # filter never claims a choice the list does not hold.
            values.insert(0, (chosen, chosen, 0))
        facets.append(
            {
                "name": facet.name,
                "values": values,
                "chosen": chosen,
                "more": facet.more,
                "html": leak_rows.facet_select(facet.name, values, chosen),
            }
        )
    return {
        "page": page,
        "rows_html": rows_html,
        "facets": facets,
        "filters": dict(pairs),
        "here": urlencode(pairs + ([("cursor", cursor)] if cursor else [])),
        "cursor": cursor,
        "next_url": f"{base}?{urlencode([*pairs, ('cursor', page.next_cursor)])}"
        if page.next_cursor
        else None,
        "first_url": f"{base}?{urlencode(pairs)}" if pairs else base,
        "can_edit": can_edit,
        "json_twin": reverse("api:triage") + (f"?{urlencode(pairs)}" if pairs else ""),
        "rules_url": reverse("memory:triage_rules"),
    }


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def triage_page(request: HttpRequest) -> HttpResponse:
    """Every stored leak finding of every save, faceted, a page at a time (?cursor=)."""
    context = _context(request, _filters(request.GET), _cursor(request.GET))
    return render_page(request, "memory/triage.html", "triage-panel", context)


def _answer(
    request: HttpRequest,
    *,
    done: dict[str, Any] | None = None,
    error: str | None = None,
) -> HttpResponse:
    """After a write: the panel with its confirmation (and undo) or its error for htmx. Without
    htmx a refusal is the page with its error (400) and a success a redirect to the queue
    (PRG) with the words as a message."""
    filters = _filters(request.POST, FILTER_PREFIX)
    cursor = _cursor(request.POST, FILTER_PREFIX + "cursor")
    fragment = wants_fragment(request)
    if done and not fragment:
        messages.success(request, done["message"])
        query = urlencode(filters.as_pairs())
        return HttpResponseRedirect(reverse("memory:triage") + (f"?{query}" if query else ""))
    context = _context(request, filters, cursor)
    context["done"], context["error"] = done, error
    status = 400 if error and not fragment else 200
    return render_page(request, "memory/triage.html", "triage-panel", context, status=status)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def bulk_action(request: HttpRequest) -> HttpResponse:
    """Accept (one reason for all) or reopen the findings ticked; all or nothing."""
    action = request.POST.get("action")
    if action not in ("accept", "reopen"):
        raise BadRequest("action must be accept or reopen")
    try:
        keys = _keys(request)
        if action == "accept":
            reason = inputs.text(request.POST.get("reason", ""), "reason") or ""
            result = services.accept_leaks(keys, reason, user=request.user)
            message = f"Accepted {_count(len(result.done), 'finding')}"
        else:
            was = services.acceptance_reasons(keys)
            result = services.reopen_leaks(keys, user=request.user)
            message = f"Reopened {_count(len(result.done), 'finding')}"
    except (InvalidInput, NotFound, Conflict) as exc:
        return _answer(request, error=str(exc))
    if result.skipped:
        message += (
            f" ({len(result.skipped)} already {'accepted' if action == 'accept' else 'open'})"
        )
    done = {
        "message": message + ".",
        "undo_action": "reopen" if action == "accept" else "accept",
        "undo_keys": [json.dumps(list(k), ensure_ascii=False) for k in result.done],
        # Reopened findings come back with the reason they were accepted for.
        "undo_reason": "" if action == "accept" else next(iter(was.values()), ""),
    }
    if not result.done:
        done["undo_keys"] = []
    return _answer(request, done=done)


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def allow_word(request: HttpRequest) -> HttpResponse:
    """ "This word is fine for this id", for the finding's viewer, its save or every save."""
    scope = request.POST.get("scope", "save")
    if scope not in ("viewer", "save", "everywhere"):
        raise BadRequest("scope must be viewer, save or everywhere")
    try:
        fields = {
            name: inputs.text(request.POST.get(name, ""), name) or ""
            for name in ("word", "entity_id", "reason", "save", "viewer_id")
        }
        rule, removed = services.allow_word(
            fields["word"],
            fields["entity_id"],
            fields["reason"],
            save_name=fields["save"] if scope != "everywhere" else "",
            viewer_id=fields["viewer_id"] if scope == "viewer" else "",
            user=request.user,
        )
    except (InvalidInput, NotFound, Conflict) as exc:
        return _answer(request, error=str(exc))
    done = {
        "message": f"Allowed “{rule.word}” for {rule.entity_id} ({rule.scope}): "
        f"{_count(removed, 'finding')} closed.",
        "undo_rule": rule.pk,
    }
    return _answer(request, done=done)


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def revoke_rule(request: HttpRequest, rule_id: int) -> HttpResponse:
    """End an allow rule: its findings are rescanned and open again."""
    try:
        rule = services.revoke_allow_rule(rule_id, user=request.user)
    except (NotFound, Conflict) as exc:
        if request.POST.get("from") == "rules":
            status = 404 if isinstance(exc, NotFound) else 409
            return _rules(request, error=str(exc), status=status)
        return _answer(request, error=str(exc))
    message = f"Revoked the rule allowing “{rule.word}” for {rule.entity_id} ({rule.scope})."
    if request.POST.get("from") == "rules":
        messages.success(request, message)
        return HttpResponseRedirect(reverse("memory:triage_rules"))
    return _answer(request, done={"message": message})


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def rules_page(request: HttpRequest) -> HttpResponse:
    """Every allow rule, in force and revoked: who made it, when, why."""
    return _rules(request)


def _rules(request: HttpRequest, error: str | None = None, status: int = 200) -> HttpResponse:
    context = {
        "rules": triage_reads.rules(include_revoked=True),
        "can_edit": request.user.has_perm(EDIT_PERMISSION),
        "json_twin": reverse("api:triage_rules"),
        "error": error,
    }
    return render_page(request, "memory/triage_rules.html", None, context, status=status)
