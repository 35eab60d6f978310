"""The admin door: entities with their aliases as an editable table; everything else read-only.

Alias writes go through memory.web.services (validation, AliasChange history, AuditLog), never by
saving aliases_json directly; the entity row itself is never saved from here.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.forms import formset_factory
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse

from memory.active_save import use
from memory.engine import audit
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.buffer.rendered import render_entry
from memory.engine.knowledge import viewer_of
from memory.models import (
    AliasChange,
    ApiToken,
    Attribute,
    AuditLog,
    BufferEntry,
    Entity,
    LeakAcceptance,
    ObjectType,
    WorldObject,
)
from memory.web import services
from memory.web.auth import new_token
from memory.web.roles import EDIT_PERMISSION, READ_PERMISSION
from memory.web.selectors.viewers import alias_history, alias_rows


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


class ReadOnlyAdmin(admin.ModelAdmin):
    """What the store records (buffer rows, histories, the audit log): looked at, never
    added, changed or deleted from the admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class EverySaveAdmin(admin.ModelAdmin):
    """Rows of every save, each named with its save; a row is opened inside its own save."""

    list_select_related = ("game_save",)

    def get_queryset(self, request: HttpRequest):
        queryset = self.model.every_save.get_queryset()
        ordering = self.get_ordering(request)
        return queryset.order_by(*ordering) if ordering else queryset

    @admin.display(description="save", ordering="game_save__name")
    def save_name(self, obj) -> str:
        return obj.game_save.name

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:  # the key is the integer uid: anything else is "no such row", never a 500
            found = (
                self.get_queryset(request).filter(pk=unquote(object_id)).first()
                if object_id
                else None
            )
        except (ValueError, ValidationError):
            found = None
        if found is None:
            return super().changeform_view(request, object_id, form_url, extra_context)
        with use(found.game_save_id):
            return self.changeform_in_save(request, object_id, form_url, extra_context)

    def changeform_in_save(self, request, object_id, form_url, extra_context):
        return super().changeform_view(request, object_id, form_url, extra_context)


class ReadOnlyEverySaveAdmin(EverySaveAdmin, ReadOnlyAdmin):
    pass


# The admin's alias table names its columns "target" and "label"; any other refusal (a
# corrupt aliases_json) is shown beside the label.
_FORM_FIELD = {"target_id": "target"}


@admin.register(Entity)
class EntityAdmin(EverySaveAdmin):
    list_display = ("id", "save_name", "world_id", "location_id", "alias_count")
    list_filter = ("game_save",)
    search_fields = ("id",)
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
        return super().get_queryset(request).filter(type=ObjectType.ENTITY)

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
        world_entities = sorted(services.entity_ids_of_world(obj) - {obj.id})
        choices = [(t, t) for t in world_entities]
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
    ) -> bool:
        """Apply the table in one transaction; False (with form errors) if any row is refused."""
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
            return False
        for warning in warnings:
            messages.warning(request, warning)
        return True

    def changeform_in_save(self, request, object_id, form_url, extra_context):
        obj = self.get_object(request, unquote(object_id))
        formset, current = self._formset(request, obj)
        if request.method == "POST":
            if not self.has_change_permission(request, obj):
                raise PermissionDenied
            if formset.is_valid() and self._save_aliases(request, obj, formset, current):
                messages.success(request, f"Aliases of {obj.id} saved.")
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


@admin.register(BufferEntry)
class BufferEntryAdmin(ReadOnlyEverySaveAdmin):
    list_display = ("id", "save_name", "owner_id", "timestamp", "rendered_line", "retracted_at")
    list_filter = ("game_save",)
    search_fields = ("=id", "=owner_id")
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
    ordering = ("-timestamp", "-created_at")

    def lookup_allowed(self, lookup: str, value: str, request=None) -> bool:
        # ?owner_id__exact=<viewer> filters to one viewer's rows without a list_filter that
        # would list every object in the store.
        return lookup in {"owner_id__exact", "owner_id"} or super().lookup_allowed(
            lookup, value, request
        )

    @admin.display(description="rendered line (as the owner reads it)")
    def rendered_line(self, obj: BufferEntry) -> str:
        with use(obj.game_save_id):
            owner = WorldObject.objects.filter(id=obj.owner_id).first()
            if owner is None:
                return f"undeliverable: owner {obj.owner_id} is not in this save"
            rendered = render_entry(obj, viewer_of(owner))
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


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ("user", "name", "expires_at")
        help_texts = {"expires_at": "Optional: past this moment the token is refused."}


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens: created (the raw value shown once, on the page that answers the save, never
    in a message cookie) and deleted, each one audit row."""

    form = ApiTokenForm
    list_display = ("name", "user", "prefix", "created_at", "expires_at")
    readonly_fields = ("prefix", "created_at", "last_used_at")

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change) -> None:
        raw = new_token(obj)
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            audit.record(
                "token.create",
                f"token:{obj.pk}",
                actor=request.user,
                after={"user": obj.user.get_username(), "name": obj.name, "prefix": obj.prefix,
                       "expires_at": obj.expires_at},
            )  # fmt: skip
        obj._raw_token = raw  # for response_add, this request only

    def response_add(self, request, obj, post_url_continue=None):
        """The page that shows the raw token, once. Not a redirect with a message: Django's
        messages travel in a signed (readable) cookie."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "token": obj,
            "raw": getattr(obj, "_raw_token", ""),
            "title": "API token created",
        }
        response = TemplateResponse(request, "admin/memory/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def delete_model(self, request, obj) -> None:
        with transaction.atomic():
            _audit_token_delete(request, obj)
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset) -> None:
        with transaction.atomic():
            for obj in queryset.select_related("user"):
                _audit_token_delete(request, obj)
            super().delete_queryset(request, queryset)


def _audit_token_delete(request: HttpRequest, obj: ApiToken) -> None:
    audit.record(
        "token.delete",
        f"token:{obj.pk}",
        actor=request.user,
        before={"user": obj.user.get_username(), "name": obj.name, "prefix": obj.prefix},
    )
