"""Entities with their aliases as an editable table; the entity row itself is never saved here.

Alias writes go through memory.services (validation, AliasChange history, AuditLog), never
by saving aliases_json directly.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.forms import formset_factory
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse

from memory import services
from memory.active_save import use
from memory.admin.base import EverySaveAdmin
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.knowledge import true_name_attributes, viewer_of
from memory.models import Attribute, Entity, ObjectType
from memory.roles import EDIT_PERMISSION, READ_PERMISSION
from memory.selectors.aliases import alias_history, alias_rows
from memory.selectors.viewers import display_names


class AliasForm(forms.Form):
    target = forms.ChoiceField(required=False)
    label = forms.CharField(required=False, max_length=200, strip=False)

    def __init__(self, *args, target_choices: list[tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [("", "—")] + target_choices


class BaseAliasFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        seen: set[str] = set()
        for form in self.forms:
            if self.can_delete and self._should_delete_form(form):
                continue
            target = form.cleaned_data.get("target")
            if not target:
                continue
            if target in seen:
                form.add_error("target", f"{target} appears twice")
            seen.add(target)


AliasFormSet = formset_factory(AliasForm, formset=BaseAliasFormSet, extra=2, can_delete=True)


# The admin's alias table names its columns "target" and "label"; any other refusal (a
# corrupt aliases_json) is shown beside the label.
_FORM_FIELD = {"target_id": "target"}


@admin.register(Entity)
class EntityAdmin(EverySaveAdmin):
    list_display = ("name", "id", "save_name", "world_id", "location_id", "alias_count")
    list_display_links = ("name",)
    list_filter = ("game_save",)
    search_fields = ("id",)  # and the true name: get_search_results
    search_help_text = "Search by name or id."
    readonly_fields = (
        "id",
        "save_name",
        "type",
        "world_id",
        "location_id",
        "is_agent",
        "aliases_json",
    )
    fields = readonly_fields
    change_form_template = "admin/memory/entity/change_form.html"

    def get_queryset(self, request: HttpRequest):
        # The true name rides along (the first true-name attribute present, in settings'
        # order): the list shows and sorts by it without a query per row.
        names = [
            Subquery(
                Attribute.every_save.filter(
                    object_id=OuterRef("id"), game_save_id=OuterRef("game_save_id"), name=attr
                ).values("value")[:1]
            )
            for attr in true_name_attributes()
        ]
        true_name = Coalesce(*names, Value(None)) if len(names) > 1 else names[0]
        return (
            super()
            .get_queryset(request)
            .filter(type=ObjectType.ENTITY)
            .annotate(true_name=true_name)
        )

    # Entity is a proxy of WorldObject, so Django would ask for view_entity / change_entity,
    # which no role carries: the roles' own permissions answer instead, so an editor (or a
    # staff account, an admin by RoleBackend) edits aliases here without being a superuser.
    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.has_perm(READ_PERMISSION) or self.has_change_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.has_perm(EDIT_PERMISSION)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # entities arrive through the loaders

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # a delete cascades a whole buffer away; not a click in the admin

    def get_search_results(self, request: HttpRequest, queryset, search_term: str):
        """By id (Django's search) or by true name: people look for "Maren", not npc-maren."""
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term:
            # The name in the row's own save (ids repeat across saves).
            named = Attribute.every_save.filter(
                object_id=OuterRef("id"),
                game_save_id=OuterRef("game_save_id"),
                name__in=true_name_attributes(),
                value__icontains=term,
            )
            found = found | queryset.filter(Exists(named))
        return found, may_have_duplicates

    @admin.display(description="name", ordering="true_name")
    def name(self, obj: Entity) -> str:
        """The true name, else the id (what the pages call it)."""
        return obj.true_name or obj.id

    @admin.display(description="aliases")
    def alias_count(self, obj: Entity) -> int | str:
        try:
            return len(parse_aliases_json(obj.aliases_json))
        except AliasesJsonError:
            return "corrupt"

    def save_model(self, request, obj, form, change) -> None:
        """Never save the entity row: its fields are read-only and aliases go via services."""

    # --- the aliases table ---------------------------------------------------------------

    def _targets(self, obj: Entity, current: dict[str, str]) -> list[tuple[str, str]]:
        """Chosen by name: "Maren Holloway (npc-maren)", sorted by what a person reads."""
        world_entities = services.entity_ids_of_world(obj) - {obj.id}
        names = display_names([*world_entities, *current])
        choices = sorted(
            ((t, names[t] if names[t] == t else f"{names[t]} ({t})") for t in world_entities),
            key=lambda choice: (choice[1].casefold(), choice[0]),
        )
        choices += [(t, f"{t} (not in this world)") for t in current if t not in world_entities]
        return choices

    def _formset(self, request: HttpRequest, obj: Entity):
        try:
            current = parse_aliases_json(obj.aliases_json)
        except AliasesJsonError:
            current = {}
        initial = [{"target": t, "label": label} for t, label in current.items()]
        kwargs = {
            "initial": initial,
            "prefix": "aliases",
            "form_kwargs": {"target_choices": self._targets(obj, current)},
        }
        if request.method == "POST":
            return AliasFormSet(request.POST, **kwargs), current
        return AliasFormSet(**kwargs), current

    def _save_aliases(
        self, request: HttpRequest, obj: Entity, formset, current: dict[str, str]
    ) -> list[str] | None:
        """Apply the table in one transaction: the warnings of what was saved, or None (with
        form errors) if any row is refused and nothing was saved."""
        warnings: list[str] = []
        try:
            with transaction.atomic():
                for form in formset.forms:
                    data = form.cleaned_data
                    if not data:
                        continue
                    old_target = form.initial.get("target")
                    target, label = data.get("target") or "", data.get("label") or ""
                    removing = formset._should_delete_form(form) or (old_target and not target)
                    if old_target and (removing or target != old_target):
                        services.delete_alias(obj.id, old_target, user=request.user, source="admin")
                    if removing or not target:
                        continue
                    if target == old_target and label == current.get(target):
                        continue
                    try:
                        result = services.set_alias(
                            obj.id, target, label, user=request.user, source="admin"
                        )
                    except services.AliasRefused as exc:
                        for field, errors in exc.by_field.items():
                            for error in errors:
                                form.add_error(_FORM_FIELD.get(field, "label"), error)
                        raise
                    warnings += result.warnings
        except services.AliasRefused:
            return None
        return warnings

    def changeform_in_save(self, request, object_id, form_url, extra_context):
        obj = self.get_object(request, unquote(object_id))
        formset, current = self._formset(request, obj)
        if request.method == "POST":
            if not self.has_change_permission(request, obj):
                raise PermissionDenied
            warnings = (
                self._save_aliases(request, obj, formset, current) if formset.is_valid() else None
            )
            if warnings is not None:
                # One message, one colour: saved with a warning is never also a green "saved".
                who = display_names([obj.id])[obj.id]
                if warnings:
                    messages.warning(
                        request, f"Aliases of {who} saved, but check: {'; '.join(warnings)}."
                    )
                else:
                    messages.success(request, f"Aliases of {who} saved.")
                return HttpResponseRedirect(request.path)
            request.method = "GET"  # re-render the page with the table's errors, saving nothing
        viewer = viewer_of(obj)
        extra_context = {
            **(extra_context or {}),
            "alias_formset": formset,
            "alias_rows": alias_rows(viewer),
            "alias_history": alias_history(obj.id, limit=30),
            "attributes": list(Attribute.objects.filter(object_id=obj.id).order_by("name")),
        }
        return super().changeform_in_save(request, object_id, form_url, extra_context)

    # --- the History view is the alias history --------------------------------------------------

    def history_view(self, request: HttpRequest, object_id: str, extra_context=None):
        """Every alias change this entity made (Django's own log never sees them: they are
        written through memory.services, not the admin's form)."""
        obj = self.get_queryset(request).filter(pk=unquote(object_id)).first()
        if obj is None or not self.has_view_permission(request, obj):
            return super().history_view(request, object_id, extra_context)
        with use(obj.game_save):
            changes = alias_history(obj.id, limit=200)
            names = display_names([obj.id, *(c.target_id for c in changes)])
        context = {
            **self.admin_site.each_context(request),
            "title": f"Alias history: {names[obj.id]}",
            "subtitle": None,
            "object": obj,
            "object_name": names[obj.id],
            "opts": self.model._meta,
            "changes": [(c, names[c.target_id]) for c in changes],
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/memory/entity/object_history.html", context)
