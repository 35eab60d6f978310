"""The inspector's settings with one URL more: Django's admin as it ships, over the buffer rows
(`stock_admin_urls`). bench_viewer.py serves it from a second gunicorn beside the inspector's
own, so the pages it times run on the settings a user runs; only this server knows the URL."""

from omnia_site.settings import *  # noqa: F403

ROOT_URLCONF = "bench.stock_admin_urls"
