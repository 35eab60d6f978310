"""What the store records, read-only: buffer rows (each with the line its owner reads), the
alias history, the audit log, and the leak findings editors accepted as expected."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Q

from memory.active_save import use
from memory.admin.base import ReadOnlyAdmin, ReadOnlyEverySaveAdmin
from memory.engine.buffer.rendered import render_entry
from memory.engine.knowledge import viewer_of
from memory.models import AliasChange, AuditLog, BufferEntry, LeakAcceptance, Save, WorldObject


class _RowsWithTheirOwners(ChangeList):
    """The list's page, each row with its owner as the row's line is rendered for (the owners
    of the page read in one statement: a read a row was 50 statements a page)."""

    def get_results(self, request) -> None:
        super().get_results(request)
        rows = self.result_list
        owners = WorldObject.every_save.filter(
            game_save_id__in={r.game_save_id for r in rows}, id__in={r.owner_id for r in rows}
        )
        viewers = {(o.game_save_id, o.id): viewer_of(o) for o in owners}
        for row in rows:
            row.owner_viewer = viewers.get((row.game_save_id, row.owner_id))


# The list's filters that name a row or its owner (the search box searches both).
_BY_ID_OR_OWNER = {"owner_id", "owner_id__exact", "q"}


@admin.register(BufferEntry)
class BufferEntryAdmin(ReadOnlyEverySaveAdmin):
    list_display = ("id", "save_name", "owner_id", "timestamp", "rendered_line", "retracted_at")
    list_filter = ("game_save",)
    search_fields = ("=id", "=owner_id")  # the box; get_search_results matches
    show_full_result_count = False
    list_per_page = 50
    fields = (
        "id",
        "save_name",
        "owner_id",
        "timestamp",
        "location_id",
        "conversation_id",
        "rendered_line",
        "intent_json",
        "outcome_json",
        "created_at",
        "retracted_at",
        "abstracted_into",
    )
    readonly_fields = fields
    # Newest save first, each save's rows newest first: the order of the (save, timestamp)
    # index, so a page is read off it. By time alone across saves no index serves, and every
    # row was sorted for each page (1M rows: 942 ms on SQLite, 400 on PostgreSQL); save and id
    # are unique together, so the admin adds no tiebreak of its own.
    ordering = ("-game_save_id", "-timestamp", "-created_at", "-id")

    def get_queryset(self, request):
        rows = super().get_queryset(request)
        if _BY_ID_OR_OWNER & set(request.GET):
            # Every index of the rows begins with the save: with the saves named, one viewer's
            # rows, or a row's id, are sought in each save's part of an index, not found by
            # reading all of it (1M rows, PostgreSQL: a viewer's page 134 -> 48 ms). The whole
            # list counts faster without (SQLite 22 ms against 8).
            rows = rows.filter(game_save_id__in=list(Save.objects.values_list("pk", flat=True)))
        return rows

    def get_search_results(self, request, queryset, search_term: str):
        """A row by its id, and every row of an owner: ids are matched as the store keeps them.
        The admin's "=" fields match ignoring case, which no index serves: every row of every
        save was read (1M rows: 128 ms on SQLite, 290 on PostgreSQL)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        if queryset.filter(id=term).exists():  # one probe: then the id's row and the owner's
            return queryset.filter(Q(id=term) | Q(owner_id=term)), False
        # No row has it for an id: the owner's rows alone, read in the order its index keeps
        # them (the OR of the two sorted every row of the owner, whole: 350 ms at 100,000).
        return queryset.filter(owner_id=term), False

    def lookup_allowed(self, lookup: str, value: str, request=None) -> bool:
        # ?owner_id__exact=<viewer> filters to one viewer's rows without a list_filter that
        # would list every object in the store.
        return lookup in {"owner_id__exact", "owner_id"} or super().lookup_allowed(
            lookup, value, request
        )

    def get_changelist(self, request, **kwargs):
        return _RowsWithTheirOwners

    @admin.display(description="rendered line (as the owner reads it)")
    def rendered_line(self, obj: BufferEntry) -> str:
        with use(obj.game_save):
            if hasattr(obj, "owner_viewer"):  # a list's row: its page read the owners
                viewer = obj.owner_viewer
            else:
                owner = WorldObject.objects.filter(id=obj.owner_id).first()
                viewer = viewer_of(owner) if owner is not None else None
            if viewer is None:
                return f"undeliverable: owner {obj.owner_id} is not in this save"
            rendered = render_entry(obj, viewer)
        return (
            rendered.line
            if rendered.line is not None
            else f"undeliverable: {rendered.undeliverable}"
        )


@admin.register(AliasChange)
class AliasChangeAdmin(ReadOnlyEverySaveAdmin):
    list_display = (
        "changed_at",
        "save_name",
        "viewer_id",
        "target_id",
        "before",
        "after",
        "changed_by",
        "source",
    )
    list_filter = ("source",)
    search_fields = ("=viewer_id", "=target_id")


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ("at", "action", "target", "actor", "actor_label")
    list_filter = ("action",)
    search_fields = ("target",)


@admin.register(LeakAcceptance)
class LeakAcceptanceAdmin(ReadOnlyEverySaveAdmin):
    """Findings an editor accepted as expected (made and withdrawn on /leaks/, audited there)."""

    list_display = (
        "accepted_at",
        "save_name",
        "viewer_id",
        "section",
        "kind",
        "text",
        "reason",
        "accepted_by",
    )
    list_filter = ("kind", "section")
    search_fields = ("=viewer_id", "text", "reason")
