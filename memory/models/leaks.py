"""The stored leak findings (PRODUCT §7): per-viewer scan bookkeeping, the findings, and the
findings an editor accepted as expected."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.active_save import SaveScopedManager
from memory.models.saves import SaveScoped

# SQLite refuses statements with too many parameters; ids go in this many at a time.
_ID_CHUNK = 500


class LeakScanManager(SaveScopedManager):
    def mark_stale(self, viewer_ids: Iterable[str] | None = None) -> int:
        """These viewers' prompts just moved (every viewer of the save when None): their
        stored findings are no longer current. Called by every door that changes what a
        prompt reads, in the write's own transaction, so the write and its mark land
        together; pages then learn who is behind from this flag alone, never by recomputing
        every viewer's inputs. A viewer with no scan row is behind already."""
        rows = self.filter(stale=False)
        if viewer_ids is None:
            return rows.update(stale=True)
        ids = sorted(set(viewer_ids))
        return sum(
            rows.filter(viewer_id__in=ids[start : start + _ID_CHUNK]).update(stale=True)
            for start in range(0, len(ids), _ID_CHUNK)
        )


class LeakScan(SaveScoped):
    """The leak-findings projection's bookkeeping, one row per viewer: the fingerprint of the
    inputs its stored findings were computed from, and whether a write since has moved its
    prompt (`stale`: set by the doors that change a prompt's inputs, `mark_stale`, and by the
    fold, whose new rows change the recent buffer and the session digest)."""

    pk = models.CompositePrimaryKey("game_save", "viewer_id")
    viewer_id = models.TextField()
    world_id = models.TextField(null=True, blank=True)
    fingerprint = models.TextField(default="")
    stale = models.BooleanField(default=True)
    scanned_at = models.DateTimeField(null=True, blank=True)
    # How many places omnia's own lines in the viewer's prompt are wrong without leaking
    # (person, number, case, a label the viewer does not hold; issue 30), as of that scan.
    flaws = models.IntegerField(default=0)
    # The viewer's stored labels worth a second look as of that scan (leaks.labels), JSON.
    labels_json = models.TextField(default="[]")
    # The viewer's stored findings per kind as of that scan, JSON ({kind: n}): the pages count
    # open findings from these rows and the few accepted ones, never from every finding.
    kinds_json = models.TextField(default="{}")

    objects = LeakScanManager()

    @staticmethod
    def kinds_json_of(kinds: Iterable[str]) -> str:
        """`kinds_json` for findings of these kinds (one a finding): what every writer of the
        counts (a rescan, an allow rule's recount) stores, so the pages read one form."""
        return json.dumps(Counter(kinds), sort_keys=True)

    class Meta(SaveScoped.Meta):
        db_table = "memory_leak_scans"
        indexes = [models.Index(fields=["game_save", "stale"], name="leak_scans_stale")]


class LeakFinding(SaveScoped):
    """One stored leak finding in one viewer's prompt context (PRODUCT §7)."""

    viewer_id = models.TextField()
    ordinal = models.IntegerField()  # the scanner's order within the viewer's prompt
    section = models.TextField()
    kind = models.TextField()
    start = models.IntegerField()
    end = models.IntegerField()
    text = models.TextField()
    entity_id = models.TextField(null=True, blank=True)
    attribute_name = models.TextField(null=True, blank=True)
    reason = models.TextField()
    # One row per distinct leak in a section (issue 13 item 10): start/end are its first
    # occurrence; every occurrence is kept as [[start, end, source row id], ...].
    world_id = models.TextField(null=True, blank=True)
    count = models.IntegerField(default=1)
    source_id = models.TextField(null=True, blank=True)
    occurrences_json = models.TextField(default="[]")
    context_before = models.TextField(default="")
    context_after = models.TextField(default="")
    # A readable id that is an ordinary word ("keeper") where every occurrence reads as a
    # description ("the old keeper"): still reported (recall first), labelled for triage.
    likely_description = models.BooleanField(default=False)

    class Meta(SaveScoped.Meta):
        db_table = "memory_leak_findings"
        indexes = [
            models.Index(fields=["game_save", "viewer_id", "ordinal"], name="leak_findings_viewer"),
            # The triage queue's word facet (and the others when a word is asked) counts every
            # current finding by text: read off this index alone, not the table (49.6 -> 9.2 ms
            # at 20,155 findings on PostgreSQL, a table rewritten by a few rescans).
            models.Index(
                fields=["game_save", "viewer_id", "kind", "text"], name="leak_findings_facets"
            ),
            # The word facet with no other filter: every finding of the save counted by text,
            # read in text order (no sort, no hash of 20,155 rows: SQLite 4.3 -> 1.5 ms,
            # PostgreSQL 3.2 -> 1.9 ms at 1M rows).
            models.Index(fields=["game_save", "text"], name="leak_findings_words"),
        ]


class LeakAcceptance(SaveScoped):
    """An editor's "expected, not a leak" for one finding, kept by what identifies it to a
    person (viewer, section, kind, text): it survives rescans while those are unchanged."""

    viewer_id = models.TextField()
    section = models.TextField()
    kind = models.TextField()
    text = models.TextField()
    reason = models.TextField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta(SaveScoped.Meta):
        db_table = "memory_leak_acceptances"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "viewer_id", "section", "kind", "text"],
                name="leak_acceptance_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.viewer_id} [{self.section}] {self.kind} {self.text!r}"


class LeakAllowRule(models.Model):
    """ "This word is fine for this id": a finding whose text (folded) and object are a rule's
    is never reported, by every scan, in the rule's scope (issue 28 item 1). A finding is
    accepted one prompt section at a time; a rule says it once for every section, viewer and
    rescan.

    Not save-scoped: a rule may hold everywhere. Its save is kept by name, not by row, because
    an import with --replace swaps a new save in under the old name and the rule must still
    hold there. Revoking keeps the row (who allowed it, who took it back) and ends it."""

    word = models.TextField()  # folded as the scanner folds (scanner.fold)
    entity_id = models.TextField()
    save_name = models.TextField(default="", blank=True)  # "": every save
    viewer_id = models.TextField(default="", blank=True)  # "": every viewer (needs a save)
    reason = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_leak_allow_rules"
        ordering = ["word", "entity_id", "save_name", "viewer_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["word", "entity_id", "save_name", "viewer_id"],
                condition=models.Q(revoked_at__isnull=True),
                name="leak_allow_rule_once",
            ),
            models.CheckConstraint(
                condition=models.Q(viewer_id="") | ~models.Q(save_name=""),
                name="leak_allow_rule_viewer_in_a_save",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.word!r} for {self.entity_id} ({self.scope})"

    @property
    def scope(self) -> str:
        if self.viewer_id:
            return f"viewer {self.viewer_id} in {self.save_name}"
        return f"save {self.save_name}" if self.save_name else "every save"
