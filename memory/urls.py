from __future__ import annotations

app_name = "memory"

urlpatterns: list = []
