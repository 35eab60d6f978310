"""What every admin of the app's rows is made of: read-only records (looked at, never added,
changed or deleted here) and rows of every save, each named with its save and opened inside it."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from memory.active_save import use


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
        with use(found.game_save):
            return self.changeform_in_save(request, object_id, form_url, extra_context)

    def changeform_in_save(self, request, object_id, form_url, extra_context):
        return super().changeform_view(request, object_id, form_url, extra_context)


class ReadOnlyEverySaveAdmin(EverySaveAdmin, ReadOnlyAdmin):
    pass
