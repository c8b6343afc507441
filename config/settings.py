"""Settings, read from the environment through django-environ (see config/env.py).

With no environment at all this runs on the embedded defaults: a SQLite file and a local
folder under ``var/``, the local rules classifier and the local digest. Production sets
``DATABASE_URL`` to PostgreSQL, ``BLOB_STORAGE=s3`` and ``MODEL_PROVIDER=bedrock`` (or
``openai`` with ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``).
"""

from pathlib import Path

from config import env

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.text("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env.flag("DEBUG", False)
SECRET_KEY = env.text("SECRET_KEY", "insecure-embedded-default-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = env.words("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")

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
JOBS_PROGRESS_INTERVAL = env.number("JOBS_PROGRESS_INTERVAL", 0.5)
JOBS_PREFETCH_WINDOW = env.number("JOBS_PREFETCH_WINDOW", 0.02)
JOBS_MAX_PREFETCH = env.integer("JOBS_MAX_PREFETCH", 32)
JOBS_ACK_BATCH = env.integer("JOBS_ACK_BATCH", 32, minimum=1)
JOBS_PREPARED_STATEMENTS = env.flag("JOBS_PREPARED_STATEMENTS", True)
JOBS_WORKER_ASYNC_COMMIT = env.flag("JOBS_WORKER_ASYNC_COMMIT", True)
JOBS_KEEP_FINISHED_DAYS = env.number("JOBS_KEEP_FINISHED_DAYS", 14.0)
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
# django-q2 only runs the timers' schedules here: its own task lists leave the admin index.
DJANGO_Q_SCHEDULER_ONLY = env.flag("DJANGO_Q_SCHEDULER_ONLY", True)

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
        # Raw emails are private: folders 0700 (every level the storage creates), files 0600.
        "OPTIONS": {
            "location": VAR_DIR / "blobs",
            "allow_overwrite": True,
            "directory_permissions_mode": 0o700,
            "file_permissions_mode": 0o600,
        },
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "blobs": _BLOBS,
}

# Model calls, for the pipeline's classifier and the workspaces' AI jobs (language_models/):
# "local" (the embedded default: the pipeline's rules classifier and an extractive digest
# that says no model wrote it), Amazon Bedrock's Converse API, or any OpenAI-compatible
# Chat Completions endpoint (OpenAI, or a model server of your own).
MODEL_PROVIDER = env.choice("MODEL_PROVIDER", "local", ("local", "bedrock", "openai"))
MODEL_TIMEOUT = env.number("MODEL_TIMEOUT", 30.0, minimum=0.1)
MODEL_MAX_OUTPUT_TOKENS = env.integer("MODEL_MAX_OUTPUT_TOKENS", 1024, minimum=16)
MODEL_MAX_PROMPT_CHARS = env.integer("MODEL_MAX_PROMPT_CHARS", 24_000, minimum=1000)
BEDROCK_MODEL_ID = env.text("BEDROCK_MODEL_ID", "anthropic.claude-3-haiku-20240307-v1:0")
BEDROCK_ENDPOINT_URL = env.text("BEDROCK_ENDPOINT_URL", AWS_ENDPOINT_URL)
OPENAI_BASE_URL = env.url("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_API_KEY = env.secret("OPENAI_API_KEY")
OPENAI_MODEL = env.text("OPENAI_MODEL", "")
OPENAI_JSON_MODE = env.flag("OPENAI_JSON_MODE", True)
if MODEL_PROVIDER == "openai" and not OPENAI_MODEL:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Setting OPENAI_MODEL is required when MODEL_PROVIDER=openai.")

# Whether model calls are on before anyone flips the switch in the admin.
MODEL_CALLS_DEFAULT = env.flag("MODEL_CALLS_DEFAULT", True)
# The local classifier's rules: JSON {"label": ["keyword", ...]}; empty = built-in rules.
PIPELINE_CLASSIFIER_RULES = env.text("PIPELINE_CLASSIFIER_RULES", "")
# Full-text index of each email's text (PostgreSQL tsvector; a plain-text fallback elsewhere).
SEARCH_INDEX = env.flag("SEARCH_INDEX", True)
SEARCH_CONFIG = env.text("SEARCH_CONFIG", "simple")
# What one email may cost. Intake refuses a larger email before reading it into memory.
PIPELINE_MAX_EMAIL_BYTES = env.integer("PIPELINE_MAX_EMAIL_BYTES", 50 * 1024 * 1024, minimum=1)
# MIME structure: an email nested deeper or made of more parts fails at once, for good, with
# the reason in the error log. Deeper nesting would exhaust Python's recursion limit; parts
# are numbered in a small-integer column.
PIPELINE_MAX_MIME_DEPTH = env.integer("PIPELINE_MAX_MIME_DEPTH", 50, minimum=1, maximum=200)
PIPELINE_MAX_MIME_PARTS = env.integer("PIPELINE_MAX_MIME_PARTS", 1000, minimum=1, maximum=32767)
# Characters of text kept per email, body and converted attachments together: text
# extraction stops when they are reached.
PIPELINE_MAX_TEXT = env.integer("PIPELINE_MAX_TEXT", 1_000_000, minimum=1)
# PDF attachments: pages read, and content-stream tokens read per page (a 30 KB PDF can
# hold a content stream of millions; a page over the budget is skipped, with a note).
PIPELINE_PDF_MAX_PAGES = env.integer("PIPELINE_PDF_MAX_PAGES", 200, minimum=1)
PIPELINE_PDF_PAGE_TOKENS = env.integer("PIPELINE_PDF_PAGE_TOKENS", 200_000, minimum=1)
# Seconds a worker lets one try of email.process / email.sweep run before stopping it.
PIPELINE_PROCESS_TIMEOUT = env.number("PIPELINE_PROCESS_TIMEOUT", 300.0, minimum=1.0)
PIPELINE_SWEEP_TIMEOUT = env.number("PIPELINE_SWEEP_TIMEOUT", 300.0, minimum=1.0)
# Rows an email's admin page lists of its attachments (and of its headers and parser
# defects); the rest are counted, and the attachments are linked to a paginated list.
PIPELINE_ADMIN_ROWS = env.integer("PIPELINE_ADMIN_ROWS", 100, minimum=1)

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
# Repositories: repository.ingest fetches each repository's URL with git (a shallow fetch)
# into a working folder per repository under REPOSITORIES_ROOT. A fetch has GIT_TIMEOUT seconds,
# and a fetch or checkout over the size limit is stopped; past REPOSITORY_MAX_FILES files
# the rest are counted but not read.
REPOSITORIES_ROOT = Path(env.text("REPOSITORIES_ROOT", str(VAR_DIR / "repositories")))
GIT_TIMEOUT = env.number("GIT_TIMEOUT", 300.0, minimum=1.0)
REPOSITORY_MAX_BYTES = env.integer("REPOSITORY_MAX_BYTES", 500 * 1024 * 1024, minimum=1024)
REPOSITORY_MAX_FILES = env.integer("REPOSITORY_MAX_FILES", 20_000, minimum=1)
# Credentials that arrive inside a repository URL are stored encrypted with the first of
# these Fernet keys (comma-separated; older keys still decrypt, so a new key is prepended to
# rotate). Empty: one key derived from SECRET_KEY.
CREDENTIALS_KEYS = env.words("CREDENTIALS_KEYS")

# The code host behind pullrequest.sync, checks.sync and capsules.retrospective: "stored"
# (the embedded default: what Repository.metadata holds, no network) or "github" (the REST
# API of github.com, or of GitHub Enterprise at GITHUB_API_URL, with GITHUB_TOKEN).
CODE_HOST = env.choice("CODE_HOST", "stored", ("stored", "github"))
GITHUB_API_URL = env.text("GITHUB_API_URL", "https://api.github.com")
GITHUB_TOKEN = env.text("GITHUB_TOKEN", "")
# Every provider's HTTP calls (see workspaces/providers/http.py): seconds to connect and to read, and
# the largest answer read.
HTTP_TIMEOUT = env.number("HTTP_TIMEOUT", 20.0, minimum=0.1)
HTTP_MAX_RESPONSE_BYTES = env.integer("HTTP_MAX_RESPONSE_BYTES", 20 * 1024 * 1024, minimum=1024)
if CODE_HOST == "github" and not GITHUB_TOKEN:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Setting GITHUB_TOKEN is required when CODE_HOST=github.")
