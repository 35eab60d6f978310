from __future__ import annotations

from django.urls import path

from memory.web import views

app_name = "memory"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("leaks/", views.leaks_page, name="leaks"),
    path("leaks.csv", views.leaks_page, {"fmt": "csv"}, name="leaks_csv"),
    path("leaks.json", views.leaks_page, {"fmt": "json"}, name="leaks_json"),
    path("projections/<str:action>/", views.projection_action, name="projection_action"),
    path("viewers/", views.pick_viewer, name="pick_viewer"),
    path("viewers/<str:viewer_id>/", views.viewer_page, name="viewer"),
    path("viewers/<str:viewer_id>/aliases/", views.aliases_panel, name="aliases_panel"),
    path("viewers/<str:viewer_id>/aliases/<str:target_id>/", views.alias_edit, name="alias_edit"),
    path("viewers/<str:viewer_id>/buffer/", views.buffer_panel, name="buffer_panel"),
    path("viewers/<str:viewer_id>/sessions/", views.sessions_panel, name="sessions_panel"),
    path("viewers/<str:viewer_id>/faces/", views.faces_panel, name="faces_panel"),
    path("viewers/<str:viewer_id>/prompt/", views.prompt_page, name="prompt"),
    path("viewers/<str:viewer_id>/entries/<str:entry_id>/", views.entry_page, name="entry"),
]
