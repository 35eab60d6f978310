from __future__ import annotations

from django.urls import include, path

from memory.web import converters  # noqa: F401  (registers the "oid" path converter)
from memory.web.saves import in_save
from memory.web.views import (
    aliases,
    compare,
    entries,
    events,
    leaks,
    live,
    moved,
    overview,
    projections,
    save_page,
    triage,
    viewer,
)

app_name = "memory"

# Everything one save holds lives under /saves/<save>/: the view runs inside that save.
in_one_save = [
    path("", save_page.save_page, name="save"),
    path("delete/", save_page.delete_save, name="save_delete"),
    path("leaks/", leaks.leaks_page, name="leaks"),
    path("leaks.csv", leaks.leaks_page, {"fmt": "csv"}, name="leaks_csv"),
    path("leaks.json", leaks.leaks_page, {"fmt": "json"}, name="leaks_json"),
    path("leaks/accept/", leaks.accept_leak, name="leak_accept"),
    path("leaks/reopen/", leaks.reopen_leak, name="leak_reopen"),
    path("leaks/alias/", leaks.add_alias, name="leak_alias"),
    path("leaks/viewers/", leaks.leak_viewers, name="leak_viewers"),
    path("projections/<str:action>/", projections.projection_action, name="projection_action"),
    path("viewers/", overview.pick_viewer, name="pick_viewer"),
    path("viewers/<oid:viewer_id>/", viewer.viewer_page, name="viewer"),
    path("viewers/<oid:viewer_id>/aliases/", aliases.aliases_panel, name="aliases_panel"),
    path("viewers/<oid:viewer_id>/aliases/<oid:target_id>/", aliases.alias_edit, name="alias_edit"),
    path("viewers/<oid:viewer_id>/buffer/", viewer.buffer_panel, name="buffer_panel"),
    path("viewers/<oid:viewer_id>/sessions/", viewer.sessions_panel, name="sessions_panel"),
    path("viewers/<oid:viewer_id>/faces/", viewer.faces_panel, name="faces_panel"),
    path("viewers/<oid:viewer_id>/prompt/", leaks.prompt_page, name="prompt"),
    path("viewers/<oid:viewer_id>/remembers/<oid:target_id>/", events.pair_page, name="pair"),
    path("viewers/<oid:viewer_id>/entries/<oid:entry_id>/", entries.entry_page, name="entry"),
    path("events/<oid:event>/", events.event_page, name="event"),
    path("search/", events.search_page, name="search"),
]
for pattern in in_one_save:
    pattern.callback = in_save(pattern.callback)

urlpatterns = [
    path("", overview.overview, name="overview"),
    # Over every save: a page learns that something it may show moved (followed saves).
    path("live/", live.live_version, name="live_version"),
    path("compare/", compare.compare_page, name="compare"),
    # Leak triage over every save (a save is a facet; each finding names its own).
    path("triage/", triage.triage_page, name="triage"),
    path("triage/act/", triage.bulk_action, name="triage_act"),
    path("triage/allow/", triage.allow_word, name="triage_allow"),
    path("triage/rules/", triage.rules_page, name="triage_rules"),
    path("triage/rules/<int:rule_id>/revoke/", triage.revoke_rule, name="triage_revoke"),
    path("saves/<str:save>/", include(in_one_save)),
    # The URLs from before saves: to the save holding the id, or a page to choose one.
    path("viewers/", moved.moved, name="moved_pick"),
    path("viewers/<path:rest>", moved.moved, name="moved_viewer"),
    path("leaks/", moved.moved, name="moved_leaks"),
    path("leaks<path:rest>", moved.moved, name="moved_leaks_more"),
    path("projections/<path:rest>", moved.moved, name="moved_projections"),
]
