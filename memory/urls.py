from __future__ import annotations

from django.urls import path

from memory import views

app_name = "memory"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("viewers/", views.pick_viewer, name="pick_viewer"),
    path("viewers/<str:viewer_id>/", views.viewer_page, name="viewer"),
    path("viewers/<str:viewer_id>/aliases/", views.aliases_panel, name="aliases_panel"),
    path("viewers/<str:viewer_id>/aliases/<str:target_id>/", views.alias_edit, name="alias_edit"),
    path("viewers/<str:viewer_id>/buffer/", views.buffer_panel, name="buffer_panel"),
    path("viewers/<str:viewer_id>/sessions/", views.sessions_panel, name="sessions_panel"),
    path("viewers/<str:viewer_id>/faces/", views.faces_panel, name="faces_panel"),
    path("viewers/<str:viewer_id>/entries/<str:entry_id>/", views.entry_page, name="entry"),
]

# The API's one error shape needs handlers on the NinjaAPI instance, which lives in omnia_site
# (not ours to edit); this module is imported once the URLconf loads, after that instance exists.
from memory.api import install_error_handlers  # noqa: E402
from omnia_site.api import api  # noqa: E402

install_error_handlers(api)
