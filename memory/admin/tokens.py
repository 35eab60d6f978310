"""API tokens: created (the raw value shown once) and deleted, each with one audit row."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.template.response import TemplateResponse

from memory.engine import audit
from memory.models import ApiToken
from memory.tokens import new_token


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
