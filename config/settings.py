"""Settings, read from the environment through django-environ (see config/env.py).

With ``DEBUG=true`` and nothing else this runs on the embedded defaults: a SQLite file and a
local folder under ``var/``, and the local rules classifier (``make demo`` does that).
Production leaves DEBUG off and sets ``SECRET_KEY`` (start-up stops without it),
``DATABASE_URL`` to PostgreSQL, ``BLOB_STORAGE=s3`` and ``MODEL_PROVIDER=bedrock``; with
DEBUG off the site is secure by default (HTTPS only, secure cookies, HSTS, a
Content-Security-Policy), each setting overridable from the environment.
"""

from pathlib import Path

from django.utils.csp import CSP

from config import env

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.text("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env.flag("DEBUG", False)
# Signs sessions, CSRF tokens and password-reset links. A built-in key is public (it is in
# this file), so only a development machine (DEBUG) may run on one.
SECRET_KEY = env.secret_key(
    "SECRET_KEY", required=not DEBUG, fallback="insecure-development-key-for-DEBUG-only"
)
ALLOWED_HOSTS = env.words("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")

# --- HTTPS, cookies, headers -------------------------------------------------------------
# Secure by default when DEBUG is off; each one can be set from the environment (say a
# first deploy that tries HTTPS out with SECURE_HSTS_SECONDS=60).
SECURE_SSL_REDIRECT = env.flag("SECURE_SSL_REDIRECT", not DEBUG)
# /metrics is scraped from inside the network, often over plain HTTP, and guarded by its
# own token or address list (JOBS_METRICS_TOKEN, JOBS_METRICS_ALLOWED_IPS).
SECURE_REDIRECT_EXEMPT = env.words("SECURE_REDIRECT_EXEMPT", r"^metrics$")
SESSION_COOKIE_SECURE = env.flag("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env.flag("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env.integer("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.flag("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env.flag("SECURE_HSTS_PRELOAD", not DEBUG)
# Behind a proxy that terminates TLS (a load balancer): the header it sets on requests that
# came over HTTPS, e.g. "X-Forwarded-Proto: https"; without it the redirect above loops.
SECURE_PROXY_SSL_HEADER = env.proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
# The site's own origins when a proxy changes the host or scheme, e.g. https://jobs.example.com.
CSRF_TRUSTED_ORIGINS = env.origins("CSRF_TRUSTED_ORIGINS")
# Scripts and style sheets only from this site, inline ones only with the request's nonce
# (the admin's templates and ours carry it); no plugins, no framing, no foreign forms.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_q",
    "jobs",
    "pipeline",
    "workspaces",
    *env.words("EXTRA_APPS"),
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                "django.template.context_processors.csp",  # the nonce of inline scripts and styles
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
DATABASES = {"default": env.database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'platform.sqlite3'}")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # IMMEDIATE takes SQLite's write lock at BEGIN, so two workers claiming at once
    # serialise instead of failing with "database is locked" half-way through a claim.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.integer("DB_CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static ---------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
LOGIN_URL = "admin:login"

# --- Job engine -----------------------------------------------------------------------
JOBS_POLL_INTERVAL = env.number("JOBS_POLL_INTERVAL", 1.0, minimum=0.01)
JOBS_HEARTBEAT_INTERVAL = env.number("JOBS_HEARTBEAT_INTERVAL", 15.0, minimum=0.1)
JOBS_REAP_AFTER = env.number("JOBS_REAP_AFTER", 300.0, minimum=0.1)
JOBS_WORKER_LEASE = env.number("JOBS_WORKER_LEASE", 60.0, minimum=0.1)
JOBS_SHUTDOWN_TIMEOUT = env.number("JOBS_SHUTDOWN_TIMEOUT", 120.0)
# The supervisor writes each running job's latest progress report at most this often.
JOBS_PROGRESS_INTERVAL = env.number("JOBS_PROGRESS_INTERVAL", 0.5, minimum=0.05)
JOBS_PREFETCH_WINDOW = env.number("JOBS_PREFETCH_WINDOW", 0.02)
JOBS_MAX_PREFETCH = env.integer("JOBS_MAX_PREFETCH", 32)
JOBS_ACK_BATCH = env.integer("JOBS_ACK_BATCH", 32, minimum=1)
JOBS_PREPARED_STATEMENTS = env.flag("JOBS_PREPARED_STATEMENTS", True)
JOBS_WORKER_ASYNC_COMMIT = env.flag("JOBS_WORKER_ASYNC_COMMIT", True)
JOBS_KEEP_FINISHED_DAYS = env.number("JOBS_KEEP_FINISHED_DAYS", 14.0)
# What enqueue accepts (jobs/validation.py). Payloads carry ids, not data: 64 KiB of JSON
# holds thousands of ids, and every claim sends the payload to a child process.
JOBS_MAX_PAYLOAD_BYTES = env.integer("JOBS_MAX_PAYLOAD_BYTES", 64 * 1024, minimum=2)
JOBS_MAX_PAYLOAD_DEPTH = env.integer("JOBS_MAX_PAYLOAD_DEPTH", 32, minimum=1)
# The furthest ahead a run_at may be. A year covers any schedule the platform keeps (trial
# reminders, backoffs of at most 30 min); a later moment is far more likely a computed date
# gone wrong, and the job would wait through every deploy and type change until then.
JOBS_MAX_RUN_AT_DAYS = env.number("JOBS_MAX_RUN_AT_DAYS", 365.0, minimum=0.01)
# A job's admin page shows each long text (payload, error, a try's traceback) cut at this
# many characters, with a link to the whole; the job list reads only the start of errors.
JOBS_ADMIN_TEXT_CHARS = env.integer("JOBS_ADMIN_TEXT_CHARS", 20_000, minimum=100)
JOBS_PRUNE_BATCH = env.integer("JOBS_PRUNE_BATCH", 5000, minimum=1)
JOBS_CLOUDWATCH_NAMESPACE = env.text("JOBS_CLOUDWATCH_NAMESPACE", "")
# The "failed jobs" figure counts jobs that failed for good within this many seconds: set
# it to how often `sweep` runs, so each published data point covers its own interval.
JOBS_METRICS_WINDOW = env.number("JOBS_METRICS_WINDOW", 300.0, minimum=1.0)
# The Prometheus endpoint (/metrics) is off until one of these is set; with both set, a
# scrape needs both. A bearer token, and/or client addresses or networks (REMOTE_ADDR).
JOBS_METRICS_TOKEN = env.text("JOBS_METRICS_TOKEN", "")
JOBS_METRICS_ALLOWED_IPS = env.networks("JOBS_METRICS_ALLOWED_IPS")
AWS_REGION = env.text("AWS_REGION", "eu-central-1")
AWS_ENDPOINT_URL = env.text("AWS_ENDPOINT_URL", "")

# --- django-q2 (optional scheduler for the timers) -------------------------------------
Q_CLUSTER = {
    "name": "platform",
    "orm": "default",
    "workers": 1,
    "timeout": 600,
    "retry": 900,
    "catch_up": False,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.text("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Email pipeline (pipeline/) ----------------------------------------------------------
# The search index's tsvector field and its lookups (harmless on SQLite).
INSTALLED_APPS.append("django.contrib.postgres")
# Raw emails live in the "blobs" storage: a local folder by default, S3 in production.
BLOB_STORAGE = env.choice("BLOB_STORAGE", "local", ("local", "s3"))
AWS_STORAGE_BUCKET_NAME = env.text("AWS_STORAGE_BUCKET_NAME", "")
AWS_S3_ENDPOINT_URL = env.text("AWS_S3_ENDPOINT_URL", AWS_ENDPOINT_URL)
if BLOB_STORAGE == "s3":
    from django.core.exceptions import ImproperlyConfigured

    if not AWS_STORAGE_BUCKET_NAME:
        raise ImproperlyConfigured("Setting AWS_STORAGE_BUCKET_NAME is required when BLOB_STORAGE=s3.")
    _BLOBS = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": AWS_S3_ENDPOINT_URL or None,
            "region_name": AWS_REGION,
            "file_overwrite": True,  # content-addressed: the same name always holds the same bytes
            "location": env.text("BLOB_PREFIX", "blobs"),
        },
    }
else:
    _BLOBS = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": VAR_DIR / "blobs", "allow_overwrite": True},
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "blobs": _BLOBS,
}

# Classification: "local" rules (embedded default) or Amazon Bedrock's Converse API.
MODEL_PROVIDER = env.choice("MODEL_PROVIDER", "local", ("local", "bedrock"))
BEDROCK_MODEL_ID = env.text("BEDROCK_MODEL_ID", "anthropic.claude-3-haiku-20240307-v1:0")
BEDROCK_ENDPOINT_URL = env.text("BEDROCK_ENDPOINT_URL", AWS_ENDPOINT_URL)
MODEL_TIMEOUT = env.number("MODEL_TIMEOUT", 30.0, minimum=0.1)
# Whether model calls are on before anyone flips the switch in the admin.
MODEL_CALLS_DEFAULT = env.flag("MODEL_CALLS_DEFAULT", True)
# The local classifier's rules: JSON {"label": ["keyword", ...]}; empty = built-in rules.
PIPELINE_CLASSIFIER_RULES = env.text("PIPELINE_CLASSIFIER_RULES", "")
# Full-text index of each email's text (PostgreSQL tsvector; a plain-text fallback elsewhere).
SEARCH_INDEX = env.flag("SEARCH_INDEX", True)
SEARCH_CONFIG = env.text("SEARCH_CONFIG", "simple")

# --- Workspaces (workspaces/) ------------------------------------------------------------
# Trial reminders go out by email: printed to the console by default, through SMTP once
# EMAIL_HOST is set. (Django 6.1's MAILERS; tests swap in the locmem backend.)
if env.text("EMAIL_HOST", ""):
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": env.text("EMAIL_HOST"),
                "port": env.integer("EMAIL_PORT", 587),
                "username": env.text("EMAIL_HOST_USER", ""),
                "password": env.text("EMAIL_HOST_PASSWORD", ""),
                "use_tls": env.flag("EMAIL_USE_TLS", True),
                "timeout": env.number("EMAIL_TIMEOUT", 20.0),
            },
        }
    }
else:
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
DEFAULT_FROM_EMAIL = env.text("DEFAULT_FROM_EMAIL", "platform@localhost")
# The AI jobs' text generator: a class with generate(prompt, *, task); the default is local
# and deterministic.
WORKSPACES_AI_GENERATOR = env.text("WORKSPACES_AI_GENERATOR", "workspaces.ai.generator.LocalGenerator")
