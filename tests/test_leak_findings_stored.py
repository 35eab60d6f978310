"""Leak findings as a stored projection: computed once, refreshed only for the viewers whose
inputs moved, read by the pages in a fixed number of queries, and always equal to a fresh scan.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import services
from memory.engine.leaks import stored
from memory.engine.leaks.world_scan import all_findings, scan_world
from memory.engine.upkeep import run_upkeep, verify_all
from memory.models import LeakFinding, LeakScan, WorldObject
from memory.selectors import leaks, prompt_view


def fresh() -> list[dict]:
    """What a scan from scratch finds, in the report's order."""
    found = [f.to_dict() for f in all_findings(scan_world())]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def reported(**filters) -> list[dict]:
    """The report's findings, less what it adds beside each (state, names): the scan's own."""
    fields = set(fresh_keys())
    return [{k: v for k, v in f.items() if k in fields} for f in leaks.leak_findings(**filters)]


def fresh_keys() -> list[str]:
    from memory.engine.leaks.scanner import Finding
    from memory.engine.leaks.world_scan import ScanFinding

    return list(ScanFinding("v", "s", Finding("system_id", 0, 1, "x", "x", "r")).to_dict())


def stored_rows() -> list[dict]:
    kept = stored.stored_findings(LeakScan.objects.values_list("viewer_id", flat=True))
    found = [f.to_dict() for v in kept for f in kept[v]]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def test_refresh_stores_what_a_fresh_scan_finds_and_then_has_nothing_to_do(demo):
    first = stored.refresh()
    assert (first.viewers_checked, first.viewers_scanned, first.findings_written) == (6, 6, 4)
    assert stored_rows() == fresh()
    again = stored.refresh()
    assert (again.viewers_checked, again.viewers_scanned, again.findings_written) == (6, 0, 0)


def test_pages_read_stored_findings_in_one_query_whatever_the_world_size(
    demo, django_assert_num_queries
):
    stored.refresh()
    # the entities' board (how many viewers are current and which are behind, by the scan
    # rows' flags, the findings per viewer and kind as each scan row counted them, and
    # whether anything is accepted): zeros kept for every current viewer
    with django_assert_num_queries(1):
        counts = leaks.leak_counts()
    assert counts["npc-pip"] == {
        "private_attribute": 0,
        "system_id": 0,
        "unknown_name": 1,
        "raw_tag": 0,
        "unresolved_tag": 0,
    }
    for n in range(30):
        WorldObject.objects.create(
            id=f"extra-{n:02d}", type="entity", world_id="harbor-town", aliases_json="[]"
        )
    stored.refresh()
    with django_assert_num_queries(1):
        counts = leaks.leak_counts()
    assert len(counts) == 36
    assert reported() == fresh()


def test_an_alias_edit_refreshes_only_that_viewer_in_its_own_transaction(demo):
    stored.refresh()
    before = {s.viewer_id: s.scanned_at for s in LeakScan.objects.all()}
    services.set_alias("npc-pip", "npc-sable", "Sable Quint", source="test")
    # Pip now knows the name: the unknown_name finding is gone, from storage, at once.
    assert stored.scan_state(["npc-pip"]).behind == []
    assert leaks.leak_findings(viewer_id="npc-pip") == []
    assert stored_rows() == fresh()
    after = {s.viewer_id: s.scanned_at for s in LeakScan.objects.all()}
    assert [v for v in after if after[v] != before[v]] == ["npc-pip"]


def test_a_write_makes_its_owner_behind_and_the_next_upkeep_rescans_only_it(demo):
    stored.refresh()
    services.remember_memory(
        "npc-pip",
        intent={
            "type": "dialogue",
            "originalText": "npc-maren owes me",
            "description": "npc-maren owes me",
            "actorId": "npc-pip",
            "targetIds": [],
        },
        timestamp="2027-01-01T00:00:00.000Z",
    )
    assert stored.scan_state().behind == ["npc-pip"]
    # the page does not wait for the worker: a viewer behind is scanned afresh, in memory
    assert reported() == fresh()
    assert LeakFinding.objects.filter(viewer_id="npc-pip").count() == 1  # nothing written
    result = run_upkeep()
    assert (result.rows_folded, result.leak_viewers_scanned) == (1, 1)
    assert stored_rows() == fresh()
    assert any(f["text"] == "npc-maren" for f in leaks.leak_findings(viewer_id="npc-pip"))


def test_a_non_agent_is_scanned_only_when_asked_for_by_id(demo, client, django_user_model):
    # A crate the save marks as no agent, with a memory naming a system id: omnia builds it no
    # prompt, so no report, count or refresh lists it unasked; its own prompt page still does.
    WorldObject.objects.create(id="crate-7", type="entity", world_id="harbor-town", is_agent=0)
    services.remember_memory(
        "crate-7",
        intent={
            "type": "dialogue",
            "originalText": "npc-maren sat on me",
            "description": "npc-maren sat on me",
            "actorId": "crate-7",
            "targetIds": [],
        },
        timestamp="2027-01-01T00:00:00.000Z",
    )
    assert "crate-7" not in {scan.viewer_id for scan in scan_world()}
    first = stored.refresh()
    assert (first.viewers_checked, first.viewers_scanned, first.findings_written) == (6, 6, 4)
    assert not LeakScan.objects.filter(viewer_id="crate-7").exists()
    assert [f for f in leaks.leak_findings() if f["viewer_id"] == "crate-7"] == []
    assert "crate-7" not in leaks.leak_counts()
    asked = leaks.leak_findings(viewer_id="crate-7")
    assert [(f["kind"], f["text"]) for f in asked] == [("system_id", "npc-maren")]
    client.force_login(django_user_model.objects.create_user("ann", is_staff=True))
    save_page = client.get("/saves/demo/").content.decode()
    assert 'data-viewer="crate-7"' not in save_page.split('id="leak-counts"')[1]
    prompt_page = client.get("/saves/demo/viewers/crate-7/prompt/").content.decode()
    assert "npc-maren" in prompt_page and 'class="leak' in prompt_page


def test_verify_reports_a_tampered_finding_and_the_command_exits_1(demo):
    stored.refresh()
    assert verify_all()[1].drift == []
    LeakFinding.objects.filter(viewer_id="npc-pip").update(text="tampered")
    findings = verify_all()[1]
    assert (findings.viewers, findings.identical, len(findings.drift)) == (6, 5, 1)
    assert findings.drift[0]["viewer_id"] == "npc-pip"
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("rebuild_projections", "--verify", "--json", stdout=out)
    assert exited.value.code == 1
    assert json.loads(out.getvalue())["leak_findings"]["drift"][0]["viewer_id"] == "npc-pip"
    call_command("rebuild_projections", stdout=io.StringIO())
    assert verify_all()[1].drift == []


def _demo_with_sable_name(*, visibility: str, also_allowed: str | None) -> dict:
    from memory.worlds.demo import DEMO_PATH

    doc = json.loads(DEMO_PATH.read_text())
    sable = next(e for e in doc["entities"] if e["id"] == "npc-sable")
    name = next(a for a in sable["attributes"] if a["name"] == "name")
    name["visibility"] = visibility
    if also_allowed:
        name["allowedEntities"] = [*name.get("allowedEntities", []), also_allowed]
    return doc


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), st.sampled_from(["npc-pip", "npc-maren", "npc-oswin"])),
        st.tuples(
            st.just("alias"),
            st.sampled_from(["npc-pip", "npc-oswin"]),
            st.sampled_from(["Sable Quint", "the tall woman", None]),
        ),
        st.tuples(st.just("upkeep")),
        st.tuples(st.just("reload")),
        st.tuples(
            st.just("attributes"),
            st.sampled_from(["PUBLIC", "PRIVATE"]),
            st.sampled_from(["npc-pip", "npc-oswin", None]),
        ),
    ),
    max_size=6,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=OPERATIONS)
def test_stored_findings_equal_a_fresh_scan_after_any_sequence(demo, operations):
    from memory.worlds.demo import load_demo
    from memory.worlds.scenario import load_world

    stored.refresh()
    for step, op in enumerate(operations):
        if op[0] == "remember":
            services.remember_memory(
                op[1],
                intent={
                    "type": "dialogue",
                    "originalText": f"npc-sable said so ({step})",
                    "description": f"npc-sable said so ({step})",
                    "actorId": op[1],
                    "targetIds": [],
                },
                timestamp=f"2027-01-01T00:{step:02d}:00.000Z",
            )
        elif op[0] == "alias" and op[2] is None:
            services.delete_alias(op[1], "npc-sable", source="test")
        elif op[0] == "alias":
            services.set_alias(op[1], "npc-sable", op[2], source="test")
        elif op[0] == "upkeep":
            run_upkeep()
        elif op[0] == "attributes":
            # The world changes by its only door, an import: Sable's true name made public
            # or private, shared with one more viewer or not.
            load_world(
                _demo_with_sable_name(visibility=op[1], also_allowed=op[2]),
                as_name="demo",
                replace=True,
            )
        else:
            load_demo(replace=True)
        # Whatever is stored, what a page shows is what a scan from scratch finds.
        assert reported() == fresh()
    run_upkeep()
    assert stored.scan_state().behind == []
    assert stored_rows() == fresh()


# SQLite has one writer and no row locks, so "two workers at once" cannot happen there; CI runs
# this on PostgreSQL (the second `make test` of .ci/run).
@pytest.mark.postgres_only
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL row locks (SKIP LOCKED)"
)
@pytest.mark.django_db(transaction=True)
def test_two_workers_never_scan_or_store_a_viewer_twice(demo):
    import contextvars
    import threading

    from django.db import connections

    for n in range(40):
        WorldObject.objects.create(
            id=f"extra-{n:02d}", type="entity", world_id="harbor-town", aliases_json="[]"
        )
    barrier = threading.Barrier(2)
    results: list[object] = [None, None]

    def work(i: int) -> None:
        try:
            barrier.wait()
            results[i] = stored.refresh()
        except Exception as exc:  # the assertion below names it
            results[i] = exc
        finally:
            connections.close_all()

    # A thread starts with an empty context: each runs in a copy of ours, active save and all.
    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(work, i)) for i in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(isinstance(r, stored.RefreshResult) for r in results), results
    assert sum(r.viewers_scanned for r in results) == 46
    assert stored.scan_state().behind == []
    assert stored_rows() == fresh()
    per_viewer = {}
    for viewer_id, ordinal in LeakFinding.objects.values_list("viewer_id", "ordinal"):
        assert (viewer_id, ordinal) not in per_viewer
        per_viewer[(viewer_id, ordinal)] = True


def test_the_prompt_page_reads_stored_findings_when_current_and_scans_when_behind(demo):
    from memory.engine.knowledge import get_viewer

    pip = get_viewer("npc-pip")
    fresh_view = prompt_view.prompt_view(pip)  # nothing stored: a fresh scan
    stored.refresh()
    assert prompt_view.stored_is_current("npc-pip")
    assert prompt_view.prompt_view(pip) == fresh_view
    LeakFinding.objects.filter(viewer_id="npc-pip").update(reason="as stored")
    assert [f["reason"] for f in prompt_view.prompt_view(pip).findings] == ["as stored"]
    services.set_alias("npc-pip", "npc-sable", "Sable Quint", source="test")
    assert prompt_view.prompt_view(get_viewer("npc-pip")).findings == []
