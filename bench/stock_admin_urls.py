"""Django's admin changelist of the buffer rows as Django ships it, the baseline PRODUCT §10
names beside the viewer page ("≤ 0.5× the Django admin changelist of the same rows"): a plain
ModelAdmin on its own AdminSite (list_display, ordering, paginator and both counts Django's
defaults), at /stock-admin/. This project's admin (/admin/) is tuned for its rows (a seventh
session made its list read a page off an index); bench_viewer.py times both.

The one change from a bare ModelAdmin: the rows of every save, as the project's admin reads
them (the model's default manager is the active save's, and the admin activates none)."""

from django.contrib import admin
from django.urls import path

from memory.models import BufferEntry
from omnia_site.urls import urlpatterns as inspector


class StockBufferEntryAdmin(admin.ModelAdmin):
    def get_queryset(self, request):
        return BufferEntry.every_save.all()


site = admin.AdminSite(name="stock_admin")
site.register(BufferEntry, StockBufferEntryAdmin)

urlpatterns = [path("stock-admin/", site.urls), *inspector]
