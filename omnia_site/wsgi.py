from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from memory.engine.collector import settle_worker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
application = get_wsgi_application()
# Start-up done: the collector set for a process that serves many requests (the module says why).
settle_worker()
