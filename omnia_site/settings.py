"""One settings file; production behaviour is switched by environment alone."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from whitenoise.compress import Compressor

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"environment variable {name} is required")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not value > 0:
        raise ImproperlyConfigured(f"{name}={raw!r} must be more than 0")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in env_str(name, default).split(",") if part.strip()]


# DEBUG is off unless asked for: `make run` asks, production never does.
DEBUG = env_bool("OMNIA_DEBUG", False)
# The test suite runs with DEBUG off, as production does, so it is the one other place a
# throwaway key is allowed; anywhere else DEBUG off means OMNIA_SECRET_KEY must be set.
TESTING = "pytest" in sys.modules or env_bool("OMNIA_TESTING", False)
SECRET_KEY = os.environ.get("OMNIA_SECRET_KEY") or (
    "dev-only-insecure-key" if DEBUG or TESTING else ""
)
if not SECRET_KEY:
    # One line with the fix: manage.py prints it and exits 2 (no traceback).
    raise ImproperlyConfigured(
        "OMNIA_SECRET_KEY is not set: set OMNIA_DEBUG=1 for local use, "
        "or OMNIA_SECRET_KEY in production"
    )
ALLOWED_HOSTS = env_list("OMNIA_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list(
    "OMNIA_CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000"
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",
    "axes",
    "csp",
    "memory",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # After WhiteNoise, which answers HEAD for static files itself.
    "memory.web.middleware.HeadAsGetMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # After HtmxMiddleware (it reads request.htmx): an expired session answers htmx with
    # HX-Redirect to the login page, never the login page inside a panel.
    "memory.web.htmx_login.HtmxLoginRedirectMiddleware",
    "memory.web.middleware.DatabaseUnavailableMiddleware",
    "memory.web.middleware.ErrorShapeMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as axes asks: it turns a refused sign-in into the throttled page (memory.web.lockout).
    "axes.middleware.AxesMiddleware",
]

# axes first: it refuses a throttled sign-in before any password is checked.
# axes first (it refuses a locked-out attempt before a password is checked), then the
# backend that reads Django's permissions off the role groups.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "memory.roles.RoleBackend",
]

ROOT_URLCONF = "omnia_site.urls"
WSGI_APPLICATION = "omnia_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memory.roles.role_context",
                "memory.web.context.world_clock",
            ],
        },
    },
]

try:
    DATABASES = {
        "default": dj_database_url.config(
            env="DATABASE_URL",
            default=f"sqlite:///{BASE_DIR / 'var' / 'omnia.sqlite3'}",
            # A web process keeps its connection (a minute, checked before reuse): a connect per
            # request cost PostgreSQL a backend fork and SQLite its page cache (every read cold).
            conn_max_age=env_int("OMNIA_DB_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    }
except ValueError as exc:  # an unknown scheme or a malformed URL: say which variable
    raise ImproperlyConfigured(
        f"DATABASE_URL is not a database URL ({str(exc).split('.')[0]}): use "
        "sqlite:///path/to/file.sqlite3 or postgres://user@host:5432/name"
    ) from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed while the projection worker writes.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                # 64 MB of page cache: the buffer indexes are written in owner order, not
                # key order, and a cache smaller than the index makes every insert a disk read.
                f"PRAGMA cache_size=-{env_int('OMNIA_SQLITE_CACHE_MB', 64) * 1024}; "
                # Checkpoint every 10,000 WAL pages (40 MB), not SQLite's 1,000: a projection
                # cycle rewrites the same pages of each owner it touches (session, its index,
                # episode), and a rarer checkpoint writes each of them back once for several
                # cycles. At 1M rows a cycle after 1,000 rows took 78-80 ms against 88-94 ms
                # (mean of 12, bench/PROJECTIONS.md).
                "PRAGMA wal_autocheckpoint=10000;"
            ),
            "timeout": 20,
            # A transaction takes the one writer lock when it begins (waiting its turn, the
            # timeout above), not at its first write: a deferred one that has read and then
            # finds another writer (the live follower's batch) committed meanwhile may not
            # become the writer at all (SQLITE_BUSY_SNAPSHOT, no wait): a page's edit answered
            # 503. Every transaction here writes; reads run outside them.
            "transaction_mode": "IMMEDIATE",
        }
    )
    # A file (not :memory:) so live-server browser tests share it; named after the database
    # so two checkouts or two DATABASE_URLs never share one test file.
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}.test"}
else:
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault(
        "connect_timeout", env_int("OMNIA_DB_CONNECT_TIMEOUT", 5)
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
if TESTING and "pytest" in sys.modules:
    # A fast hasher for the suite's own logins (Django's advice for tests: each PBKDF2 hash
    # costs a few hundred ms, and the throttling tests fail logins by the dozen). PBKDF2 stays
    # listed, so a password a child process hashed the production way still checks.
    PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where collectstatic writes. A process that collects beside others reading the checkout's
# (a benchmark's server while a test suite runs) gives its own: collectstatic deletes the
# unhashed copies as it goes, and a reader listing the directory meanwhile fails.
STATIC_ROOT = Path(env_str("OMNIA_STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
# collectstatic with the manifest compresses each file twice over (gzip, brotli at its best),
# and the hashed copy and the original both: about 40 s of CPU, most of it on API docs' source
# maps (5 MB) a browser fetches only with its developer tools open. Only hashed names are
# served ({% static %} writes them) and maps go uncompressed: a few seconds.
WHITENOISE_KEEP_ONLY_HASHED_FILES = True
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("OMNIA_MANIFEST_STATIC", not DEBUG and not TESTING)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG or TESTING

# Django's ModelBackend, plus the roles an account holds by its flags (memory/roles.py).
LOGIN_URL = "login"
# A write the CSRF check refuses: a styled page that says how to get the change back.
CSRF_FAILURE_VIEW = "memory.web.error_pages.csrf_failure"
LOGIN_REDIRECT_URL = "memory:overview"
LOGOUT_REDIRECT_URL = "login"

# Production hardening, switched by environment (behind TLS set OMNIA_SECURE=1).
SECURE = env_bool("OMNIA_SECURE", False)
SESSION_COOKIE_SECURE = SECURE
CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = SECURE
SECURE_HSTS_SECONDS = 31536000 if SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE
SECURE_HSTS_PRELOAD = SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if SECURE else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read raw (memory/web/sessions.py says why).
SESSION_ENGINE = "memory.web.sessions"
X_FRAME_OPTIONS = "DENY"

# No inline script, no external origin: every asset is vendored and served by us. The
# interactive API docs page loads its own bundle; everything else is strict.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/docs"],
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Login throttling (django-axes, hooks in memory/web/lockout.py), three counts within 15
# minutes, each with its own limit, so one account's failures never lock out another account:
# - one account from one address: 5 failures (OMNIA_LOGIN_FAILURE_LIMIT), the usual guesser;
# - one account from any address: 20 (OMNIA_LOGIN_ACCOUNT_FAILURE_LIMIT), a distributed
#   guesser; higher, so a stranger cannot cheaply lock a user out from everywhere;
# - one address, counted in distinct accounts that failed from it: 10
#   (OMNIA_LOGIN_ADDRESS_ACCOUNT_LIMIT), a password sprayer. Counting accounts, not failures,
#   is what keeps a user's own typos from locking out the colleagues behind the same address.
# Then 429 until 15 minutes have passed since the last counted failure. Counted in the
# database (axes' database handler), so every web process sees the same count.
AXES_FAILURE_LIMIT = env_int("OMNIA_LOGIN_FAILURE_LIMIT", 5)
OMNIA_LOGIN_ACCOUNT_FAILURE_LIMIT = env_int("OMNIA_LOGIN_ACCOUNT_FAILURE_LIMIT", 20)
OMNIA_LOGIN_ADDRESS_ACCOUNT_LIMIT = env_int("OMNIA_LOGIN_ADDRESS_ACCOUNT_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=15)
# In this order; memory.web.lockout.LoginFailures gives each its limit above.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], ["username"], ["ip_address"]]
# The client address is REMOTE_ADDR, unless it is one of OMNIA_TRUSTED_PROXIES (addresses or
# networks, comma-separated: the reverse proxy in front of the site); then it is the nearest
# X-Forwarded-For address that is not a trusted proxy. Without it, behind a proxy every client
# would share the proxy's address; trusting X-Forwarded-For from anyone would let a guesser
# pick a fresh address per try.
OMNIA_TRUSTED_PROXIES = env_list("OMNIA_TRUSTED_PROXIES", "")
AXES_CLIENT_IP_CALLABLE = "memory.web.lockout.client_address"
AXES_HANDLER = "memory.web.lockout.LoginFailures"
AXES_USERNAME_CALLABLE = "memory.web.lockout.username_key"
AXES_LOCKOUT_CALLABLE = "memory.web.lockout.throttled_response"
# Attempts refused while throttled are not counted, so the pause does not grow with them.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
# Failures only; successful sign-ins are not logged.
AXES_DISABLE_ACCESS_LOG = True

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# The memory engine's knobs.
OMNIA_TRUE_NAME_ATTRIBUTES = env_list("OMNIA_TRUE_NAME_ATTRIBUTES", "name,true_name")
OMNIA_EPISODE_GAP_MINUTES = env_int("OMNIA_EPISODE_GAP_MINUTES", 30)
OMNIA_PROJECTION_SHARDS = env_int("OMNIA_PROJECTION_SHARDS", 4)
OMNIA_BUFFER_PAGE_SIZE = env_int("OMNIA_BUFFER_PAGE_SIZE", 50)
# How long one buffer page may read rows to find lines that pass its filters; past it the
# page shows what it found and "searched back to …, continue" (issue 25).
OMNIA_BUFFER_SCAN_SECONDS = env_float("OMNIA_BUFFER_SCAN_SECONDS", 0.25)
# Processes a rebuild (and the first cycle after an import) and its leak rescan use: a helper
# process takes half of the owners and of the viewers (memory.engine.fanout). Default: 2 on a
# machine with two cores or more; 1 keeps it to one process.
OMNIA_REBUILD_PROCESSES = env_int("OMNIA_REBUILD_PROCESSES", min(2, os.cpu_count() or 1))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("OMNIA_LOG_LEVEL", "WARNING")},
}
