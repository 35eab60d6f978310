"""The leak triage queue over every save (the /triage/ page's twin), bulk accept and reopen,
and the allow rules."""

from __future__ import annotations

from dataclasses import asdict

from django.http import HttpRequest
from ninja import Router

from memory import inputs, services
from memory.selectors import triage as triage_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS, ErrorOut
from memory.web.auth import user_of
from memory.web.schemas import (
    AllowRuleIn,
    AllowRuleMadeOut,
    AllowRuleOut,
    TriageBulkIn,
    TriageBulkOut,
    TriageOut,
)

router = Router()


@router.get("/triage", response={200: TriageOut, **READ_ERRORS}, url_name="triage")
def queue(
    request: HttpRequest,
    save: str | None = None,
    viewer: str | None = None,
    kind: str | None = None,
    word: str | None = None,
    state: str | None = None,
    cursor: str | None = None,
    limit: int = triage_reads.PAGE_SIZE,
):
    """Every stored leak finding of every save whose viewer is scanned, faceted by save,
    viewer, kind, word (case-insensitive) and state; a page at a time (`next_cursor`)."""
    access.require_reader(request)
    given = {
        name: (inputs.text(value, name) or "").strip() or None
        for name, value in (
            ("save", save),
            ("viewer", viewer),
            ("kind", kind),
            ("word", word),
            ("state", state),
        )
    }
    page = triage_reads.queue(
        triage_reads.QueueFilters(**given),
        cursor=inputs.text(cursor, "cursor") or None,
        limit=limit,
    )
    return {**asdict(page), "facets": [asdict(f) for f in page.facets]}


def _keys(payload: TriageBulkIn) -> list[services.QueueKey]:
    inputs.payload(payload)
    keys = [(k.save, k.viewer_id, k.section, k.kind, k.text) for k in payload.keys]
    for key in keys:
        for name, value in zip(("save", "viewer_id", "section", "kind", "text"), key, strict=True):
            inputs.text(value, name)
    return list(dict.fromkeys(keys))


def _bulk_out(result: services.BulkResult) -> dict:
    names = ("save", "viewer_id", "section", "kind", "text")
    return {
        "done": [dict(zip(names, k, strict=True)) for k in result.done],
        "skipped": [dict(zip(names, k, strict=True)) for k in result.skipped],
    }


@router.post(
    "/triage/accept", response={200: TriageBulkOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="triage_accept",
)  # fmt: skip
def accept(request: HttpRequest, payload: TriageBulkIn):
    """Accept every finding named with one reason, all or nothing (editors)."""
    access.require_editor(request)
    keys = _keys(payload)
    return _bulk_out(services.accept_leaks(keys, payload.reason, user=user_of(request)))


@router.post(
    "/triage/reopen", response={200: TriageBulkOut, **WRITE_ERRORS}, url_name="triage_reopen"
)
def reopen(request: HttpRequest, payload: TriageBulkIn):
    """Withdraw the acceptance of every finding named (editors)."""
    access.require_editor(request)
    return _bulk_out(services.reopen_leaks(_keys(payload), user=user_of(request)))


@router.get(
    "/triage/rules", response={200: list[AllowRuleOut], **READ_ERRORS}, url_name="triage_rules"
)
def rules(request: HttpRequest, revoked: bool = False):
    """The allow rules in force (and, with ?revoked=true, those revoked too)."""
    access.require_reader(request)
    return [triage_reads.rule_dict(r) for r in triage_reads.rules(include_revoked=revoked)]


@router.post(
    "/triage/rules", response={201: AllowRuleMadeOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="triage_allow",
)  # fmt: skip
def allow(request: HttpRequest, payload: AllowRuleIn):
    """ "This word is fine for this id" (editors): the findings it silences close now and no
    scan reports them again in its scope (one viewer, one save, or every save)."""
    access.require_editor(request)
    inputs.payload(payload)
    rule, removed = services.allow_word(
        payload.word,
        payload.entity_id,
        payload.reason,
        save_name=payload.save,
        viewer_id=payload.viewer_id,
        user=user_of(request),
    )
    return 201, {**triage_reads.rule_dict(rule), "findings_removed": removed}


@router.post(
    "/triage/rules/{int:rule_id}/revoke", response={200: AllowRuleOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="triage_revoke",
)  # fmt: skip
def revoke(request: HttpRequest, rule_id: int):
    """End an allow rule (editors): its viewers are rescanned, its findings open again."""
    access.require_editor(request)
    return triage_reads.rule_dict(services.revoke_allow_rule(rule_id, user=user_of(request)))
