from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from memory.web.health import healthz
from omnia_site.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("healthz", healthz, name="healthz"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", api.urls),
    path("", include("memory.web.urls")),
]

# Every refusal styled (pages) or in the API's one shape (/api/): memory/web/error_pages.py.
handler400 = "memory.web.error_pages.bad_request"
handler403 = "memory.web.error_pages.permission_denied"
handler404 = "memory.web.error_pages.page_not_found"
handler500 = "memory.web.error_pages.server_error"
