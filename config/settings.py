"""Settings, read from the environment through django-environ (see config/env.py).

With ``DEBUG=true`` and nothing else this runs on the embedded defaults: a SQLite file and a
local folder under ``var/``, the local rules classifier and the local digest (``make demo``
does that). Production leaves DEBUG off and sets ``SECRET_KEY`` (start-up stops without
it), ``DATABASE_URL`` to PostgreSQL, ``BLOB_STORAGE=s3`` and ``MODEL_PROVIDER=bedrock`` (or
``openai`` with ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``); with DEBUG off the site is secure
by default (HTTPS only, secure cookies, HSTS, a Content-Security-Policy), each setting
overridable from the environment.
"""

from pathlib import Path
from typing import Any

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
    # The admin, its modules imported by the URLconf, not at start-up (config/apps.py).
    "config.apps.AdminConfig",
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
if DATABASES["default"]["ENGINE"].endswith("mysql"):
    # MariaDB (10.6 or newer) or MySQL 8 through mysqlclient, the driver Django supports.
    # utf8mb4: an email's subject may hold any character, emoji included. READ COMMITTED:
    # a claim's SKIP LOCKED reads the newest committed rows and keeps no gap locks, so
    # claimers and enqueuers do not block each other (REPEATABLE READ, InnoDB's default,
    # locks the gaps it scans). Strict mode refuses a value that does not fit instead of
    # cutting it. (The engine makes every session speak UTC itself: ``jobs.apps``.)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "charset": "utf8mb4",
            # The session's collation must be the tables' (an expression's text compared with
            # a column otherwise fails: "Illegal mix of collations"). Create the database
            # with CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci.
            "collation": env.text("DATABASE_COLLATION", "utf8mb4_unicode_ci"),
            "isolation_level": "read committed",
            "init_command": "SET sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'",
        }
    )
    DATABASES["default"]["TEST"] = {
        "CHARSET": "utf8mb4",
        "COLLATION": DATABASES["default"]["OPTIONS"]["collation"],
    }
    # Django warns that MariaDB has no partial or conditional unique indexes; migrations
    # platform 0010 and pipeline 0004 build what replaces each one the code relies on
    # (unique indexes on generated columns, indexes that lead with the status).
    # Origin.key's 300 characters fit InnoDB's 3,072-byte key limit under utf8mb4.
    SILENCED_SYSTEM_CHECKS = ["models.W036", "models.W037", "mysql.W003"]
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# "transaction" when DATABASE_URL goes through a pooler in transaction mode (PgBouncer's
# pool_mode = transaction): each transaction may run on another server session, so nothing
# may rely on session state. "session" for a direct connection (or a pooler in session mode).
JOBS_DATABASE_POOL_MODE = env.choice(
    env.renamed("JOBS_DATABASE_POOL_MODE", "DATABASE_POOL_MODE"), "session", ("session", "transaction")
)
if JOBS_DATABASE_POOL_MODE == "transaction":
    # A server-side cursor outside a transaction is WITH HOLD: it lives in the session.
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
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

# --- Job engine (docs/settings.md) --------------------------------------------------------
# The engine's settings keep the engine's own defaults (jobs/conf.py): each is set here only
# when the environment names it, and the engine's checks validate what it sets
# (platform.E001 and on, at every command's start).
globals().update(
    env.given(
        "number",
        "JOBS_POLL_INTERVAL",
        "JOBS_HEARTBEAT_INTERVAL",
        "JOBS_REAP_AFTER",
        "JOBS_WORKER_LEASE",
        "JOBS_SHUTDOWN_TIMEOUT",
        "JOBS_PROGRESS_INTERVAL",
        "JOBS_PREFETCH_WINDOW",
        "JOBS_SHARE_BORROW_LIMIT",
        "JOBS_KEEP_FINISHED_DAYS",
        "JOBS_MAX_RUN_AT_DAYS",
        "JOBS_MAX_RETRY_LATER_SECONDS",
        "JOBS_METRICS_WINDOW",
        "JOBS_SCHEDULE_GRACE",
        "JOBS_SCHEDULE_CATCH_UP_WINDOW",
        "JOBS_SCHEDULE_CLOCK_OFFSET",  # tests only: moves the timers' clock
        "JOBS_ROLLUP_KEEP_DAYS",
    )
    | env.given(
        "integer",
        "JOBS_MAX_PREFETCH",
        "JOBS_ACK_BATCH",
        "JOBS_PRUNE_BATCH",
        "JOBS_MAX_PAYLOAD_BYTES",
        "JOBS_MAX_PAYLOAD_DEPTH",
        "JOBS_ADMIN_TEXT_CHARS",
        "JOBS_TRY_LOG_LINES",
        "JOBS_TRY_LOG_BYTES",
        "JOBS_FLOW_LEASE",
    )
    | env.given("flag", "JOBS_SCHEDULER")
    | env.given("text", "JOBS_CLOUDWATCH_NAMESPACE", "JOBS_METRICS_TOKEN", "JOBS_TRY_LOG_LEVEL")
)
# This platform's own choices. Behind a transaction pooler a prepared statement lives in one
# server session and the next transaction may run in another (PgBouncer 1.21+ with
# max_prepared_statements keeps them: set it true there); the supervisor's asynchronous
# commit is a session setting that would stay for the pooler's next client.
JOBS_PREPARED_STATEMENTS = env.flag("JOBS_PREPARED_STATEMENTS", JOBS_DATABASE_POOL_MODE == "session")
JOBS_WORKER_ASYNC_COMMIT = env.flag("JOBS_WORKER_ASYNC_COMMIT", JOBS_DATABASE_POOL_MODE == "session")
# LISTEN needs a session of its own: a worker's wake-up connection goes here, directly to
# PostgreSQL, when DATABASE_URL goes through a transaction pooler. Unset there, workers poll.
JOBS_LISTEN_DATABASE = env.optional_database("JOBS_LISTEN_DATABASE_URL")
# The Prometheus endpoint (/metrics) is off until a token or this list is set.
JOBS_METRICS_ALLOWED_IPS = env.networks("JOBS_METRICS_ALLOWED_IPS")
# The region and endpoint of AWS's clients: CloudWatch (the engine), S3 and Bedrock (below).
AWS_REGION = env.text("AWS_REGION", "eu-central-1")
AWS_ENDPOINT_URL = env.text("AWS_ENDPOINT_URL", "")
JOBS_AWS_REGION = env.text("JOBS_AWS_REGION", AWS_REGION)
JOBS_AWS_ENDPOINT_URL = env.text("JOBS_AWS_ENDPOINT_URL", AWS_ENDPOINT_URL)
# django.tasks runs on the engine: any @task is a job on `runworker` (jobs/backends.py).
TASKS: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "jobs.backends.JobsBackend", "QUEUES": ["default"]}
}

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
JOBS_DJANGO_Q_SCHEDULER_ONLY = env.flag(
    env.renamed("JOBS_DJANGO_Q_SCHEDULER_ONLY", "DJANGO_Q_SCHEDULER_ONLY"), True
)
# Functions django-q2 may run besides the timers (dotted names); any other is refused.
JOBS_DJANGO_Q_ALLOWED_FUNCTIONS = env.words("JOBS_DJANGO_Q_ALLOWED_FUNCTIONS")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.text("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Django logs each task's start and end at INFO whatever the root's level (its
        # "django" logger is at INFO): LOG_LEVEL decides, as for the worker's own lines.
        "django.tasks": {"level": env.text("LOG_LEVEL", "INFO")},
    },
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
# The model provider's request budget: at most this many AI jobs start a minute across the
# whole fleet (the `ai` queue's rate, docs/flow-control.md); 0: no limit.
MODEL_REQUESTS_PER_MINUTE = env.integer("MODEL_REQUESTS_PER_MINUTE", 0, minimum=0, maximum=100_000)
# Flow control (docs/flow-control.md): the ai queue's jobs call the model, so the fleet starts
# at most that many of them a minute; an operator may change it on the Queues page.
JOBS_QUEUES = {"ai": {"rate": f"{MODEL_REQUESTS_PER_MINUTE}/m"}} if MODEL_REQUESTS_PER_MINUTE else {}
BEDROCK_MODEL_ID = env.text("BEDROCK_MODEL_ID", "anthropic.claude-3-haiku-20240307-v1:0")
BEDROCK_ENDPOINT_URL = env.text("BEDROCK_ENDPOINT_URL", AWS_ENDPOINT_URL)
OPENAI_BASE_URL = env.url("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_API_KEY = env.secret("OPENAI_API_KEY")
OPENAI_MODEL = env.text("OPENAI_MODEL", "")
OPENAI_JSON_MODE = env.flag("OPENAI_JSON_MODE", True)
if MODEL_PROVIDER == "openai" and not OPENAI_MODEL:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Setting OPENAI_MODEL is required when MODEL_PROVIDER=openai.")

# --- The email index: embeddings in Qdrant beside the full-text index (docs/email-index.md) ---
# Who turns text into vectors: "local" (the embedded default, WordLlama's static model shipped
# in the wordllama package, no service), Amazon Bedrock (Titan Text Embeddings V2, Cohere
# Embed) or any OpenAI-compatible /embeddings endpoint.
VECTOR_INDEX = env.flag("VECTOR_INDEX", True)
EMBEDDING_PROVIDER = env.choice("EMBEDDING_PROVIDER", "local", ("local", "bedrock", "openai"))
_EMBEDDING_DEFAULTS = {
    "local": ("wordllama-l2-supercat", 256),
    "bedrock": ("amazon.titan-embed-text-v2:0", 1024),
    "openai": ("text-embedding-3-small", 1536),
}[EMBEDDING_PROVIDER]
EMBEDDING_MODEL = env.text("EMBEDDING_MODEL", _EMBEDDING_DEFAULTS[0])
EMBEDDING_DIMENSIONS = env.integer("EMBEDDING_DIMENSIONS", _EMBEDDING_DEFAULTS[1], minimum=1, maximum=65536)
if EMBEDDING_PROVIDER == "local" and EMBEDDING_MODEL != "wordllama-l2-supercat":
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "Setting EMBEDDING_MODEL must be wordllama-l2-supercat (or unset) with EMBEDDING_PROVIDER=local: "
        "it is the one model the package ships."
    )
if EMBEDDING_PROVIDER == "local" and EMBEDDING_DIMENSIONS not in (64, 128, 256):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "Setting EMBEDDING_DIMENSIONS must be 64, 128 or 256 with EMBEDDING_PROVIDER=local."
    )
# The OpenAI-compatible endpoint's address and key, by default those of the chat client.
EMBEDDING_BASE_URL = env.url("EMBEDDING_BASE_URL", OPENAI_BASE_URL)
EMBEDDING_API_KEY = env.secret("EMBEDDING_API_KEY") or OPENAI_API_KEY
# Send "dimensions" with each request (OpenAI's text-embedding-3 models shorten their vectors
# to it); many self-hosted servers refuse the field, so it is sent only when asked for.
EMBEDDING_SEND_DIMENSIONS = env.flag("EMBEDDING_SEND_DIMENSIONS", False)
# Seconds one embedding request may take in all, however slowly the service answers.
EMBEDDING_TIMEOUT = env.number("EMBEDDING_TIMEOUT", 30.0, minimum=0.1)
EMBEDDING_BATCH_SIZE = env.integer("EMBEDDING_BATCH_SIZE", 64, minimum=1, maximum=2048)
# At most this many embedding requests a minute from each process (0: no limit).
EMBEDDING_REQUESTS_PER_MINUTE = env.integer("EMBEDDING_REQUESTS_PER_MINUTE", 0, minimum=0)
EMBEDDING_MAX_ANSWER_BYTES = env.integer("EMBEDDING_MAX_ANSWER_BYTES", 64 * 1024 * 1024, minimum=1024)
# An email's text (subject, sender, body, converted attachments; at most PIPELINE_MAX_TEXT
# characters) is cut into chunks of this many characters, each overlapping the one before.
EMBEDDING_CHUNK_CHARS = env.integer("EMBEDDING_CHUNK_CHARS", 1500, minimum=100, maximum=100_000)
EMBEDDING_CHUNK_OVERLAP = env.integer("EMBEDDING_CHUNK_OVERLAP", 200, minimum=0)
if EMBEDDING_CHUNK_OVERLAP >= EMBEDDING_CHUNK_CHARS // 2:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "Setting EMBEDDING_CHUNK_OVERLAP must be less than half of EMBEDDING_CHUNK_CHARS."
    )
# Qdrant: a server at QDRANT_URL in production; unset, Qdrant's local mode in QDRANT_PATH
# (the embedded default), which admits one process at a time: each process takes its turn
# for one operation and waits at most QDRANT_LOCAL_WAIT seconds for it.
QDRANT_URL = env.optional_url("QDRANT_URL")
QDRANT_API_KEY = env.secret("QDRANT_API_KEY")
QDRANT_PATH = Path(env.text("QDRANT_PATH", str(VAR_DIR / "qdrant")))
QDRANT_TIMEOUT = env.number("QDRANT_TIMEOUT", 10.0, minimum=0.1)
QDRANT_LOCAL_WAIT = env.number("QDRANT_LOCAL_WAIT", 10.0, minimum=0.0)
QDRANT_COLLECTION_PREFIX = env.text("QDRANT_COLLECTION_PREFIX", "emails")
# Partially indexed emails completed by each sweep (the job index.complete), at most.
INDEX_CATCH_UP_BATCH = env.integer("INDEX_CATCH_UP_BATCH", 200, minimum=1)
# Emails a search by meaning returns (the admin's list search, "Similar emails").
SEARCH_MEANING_RESULTS = env.integer("SEARCH_MEANING_RESULTS", 20, minimum=1, maximum=1000)
# The list search leaves out emails nearer by meaning than this share of the best one's score
# (the nearest emails are always some emails, related or not).
SEARCH_MEANING_CUTOFF = env.number("SEARCH_MEANING_CUTOFF", 0.5, minimum=0.0)

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

# --- Work connections and webhooks (workspaces/) -----------------------------------------
# Where workmanagement.sync reads a connection's items: "stored" (the embedded default for the
# demo: the connection's stored snapshot, no network, labelled so in the admin) or "api" (each
# connection's provider by its kind: Jira Cloud, ClickUp, Monday; see workspaces/trackers/).
WORK_TRACKER = env.choice("WORK_TRACKER", "stored", ("stored", "api"))
# A sync lists everything (which is what finds deleted items) when the last full listing is
# older than this many seconds; in between it asks only for what changed.
WORK_SYNC_FULL_EVERY = env.integer("WORK_SYNC_FULL_EVERY", 3600, minimum=0)
# A listing is written as it arrives and stops past this many items (a provider that pages
# for ever, or a connection pointed at far more than one project or board).
WORK_SYNC_MAX_ITEMS = env.integer("WORK_SYNC_MAX_ITEMS", 200_000, minimum=1)
# Webhook secrets, each a comma-separated list (the current one first, then any being
# retired): HMAC keys for GitHub (X-Hub-Signature-256), Jira admin webhooks (X-Hub-Signature)
# and ClickUp (X-Signature: each ClickUp webhook has its own secret, list every one as
# "<webhook id>:<secret>"), and the
# signing secret of the Monday app whose JWT signs its deliveries. Unset: every delivery to
# that endpoint is refused (401).
GITHUB_WEBHOOK_SECRET = env.secrets("GITHUB_WEBHOOK_SECRET")
JIRA_WEBHOOK_SECRET = env.secrets("JIRA_WEBHOOK_SECRET")
CLICKUP_WEBHOOK_SECRET = env.secrets("CLICKUP_WEBHOOK_SECRET")
MONDAY_SIGNING_SECRET = env.secrets("MONDAY_SIGNING_SECRET")
# The address Monday posts to, as its JWTs name it ("aud"); empty: this request's own URL.
MONDAY_WEBHOOK_URL = env.text("MONDAY_WEBHOOK_URL", "")
# A webhook body larger than this is refused with 413 before it is read.
WEBHOOK_MAX_BODY_BYTES = env.integer("WEBHOOK_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
# A webhook body nested deeper than this (objects and lists) is refused with 400.
WEBHOOK_MAX_DEPTH = env.integer("WEBHOOK_MAX_DEPTH", 64, minimum=4)
# Monday's JWTs may be valid for at most this many seconds (from now, and from their iat).
MONDAY_WEBHOOK_TOKEN_MAX_AGE = env.integer("MONDAY_WEBHOOK_TOKEN_MAX_AGE", 3600, minimum=60)
# Recorded deliveries are deleted after this many days (manage.py sweep).
WEBHOOK_DELIVERIES_KEEP_DAYS = env.number("WEBHOOK_DELIVERIES_KEEP_DAYS", 14.0, minimum=0.0)

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
# Folders of this machine a repository may be read from (local_path, file:// URLs, absolute
# paths), comma-separated; never REPOSITORIES_ROOT or the platform's own code. Empty in
# production: no host folder at all; a development machine (DEBUG) may read the demo's.
REPOSITORY_LOCAL_ROOTS = [
    Path(folder) for folder in env.words("REPOSITORY_LOCAL_ROOTS", str(VAR_DIR / "demo-git") if DEBUG else "")
]
# Bounds on what a hostile repository makes git do (workspaces/git.py): entries of the tree
# (files, links and folders, counted before the checkout), bytes one git command may print,
# and the address space of every git process and helper (a flood of refs advertised).
REPOSITORY_MAX_ENTRIES = env.integer("REPOSITORY_MAX_ENTRIES", 100_000, minimum=1)
GIT_MAX_OUTPUT_BYTES = env.integer("GIT_MAX_OUTPUT_BYTES", 64 * 1024 * 1024, minimum=64 * 1024)
GIT_MAX_MEMORY_BYTES = env.integer("GIT_MAX_MEMORY_BYTES", 1024 * 1024 * 1024, minimum=16 * 1024 * 1024)
# Credentials that arrive inside a repository URL are stored encrypted with the first of
# these Fernet keys (comma-separated; older keys still decrypt, so a new key is prepended to
# rotate). Empty: one key derived from SECRET_KEY.
CREDENTIALS_KEYS = env.words("CREDENTIALS_KEYS")
# A stored credential or token is sent over HTTPS only; these hosts (comma-separated names,
# ".example.com" for every host under one) may take one over plain HTTP too. Empty: none.
CREDENTIALS_PLAIN_HTTP_HOSTS = env.words("CREDENTIALS_PLAIN_HTTP_HOSTS")
# A work connection's API address is one of its provider's own hosts (*.atlassian.net,
# api.clickup.com, api.monday.com) or one of these (names, ".example.com" for every host
# under one); a host resolving to a loopback, link-local, private or reserved address is
# refused unless PROVIDER_ALLOWED_NETWORKS holds that address.
PROVIDER_ALLOWED_HOSTS = env.words("PROVIDER_ALLOWED_HOSTS")
PROVIDER_ALLOWED_NETWORKS = env.networks("PROVIDER_ALLOWED_NETWORKS")

# The code host behind pullrequest.sync, checks.sync and capsules.retrospective: "stored"
# (the embedded default: what Repository.metadata holds, no network) or "github" (the REST
# API of github.com, or of GitHub Enterprise at GITHUB_API_URL, with GITHUB_TOKEN).
CODE_HOST = env.choice("CODE_HOST", "stored", ("stored", "github"))
GITHUB_API_URL = env.text("GITHUB_API_URL", "https://api.github.com")
GITHUB_TOKEN = env.text("GITHUB_TOKEN", "")
# Every provider's HTTP calls (see workspaces/providers/http.py): seconds to connect and to
# read, seconds for the whole call however slowly the host answers, and the largest answer
# read, counted once decoded (for the model and embedding clients too).
HTTP_TIMEOUT = env.number("HTTP_TIMEOUT", 20.0, minimum=0.1)
HTTP_DEADLINE = env.number("HTTP_DEADLINE", 60.0, minimum=0.1)
HTTP_MAX_RESPONSE_BYTES = env.integer("HTTP_MAX_RESPONSE_BYTES", 20 * 1024 * 1024, minimum=1024)
if CODE_HOST == "github" and not GITHUB_TOKEN:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Setting GITHUB_TOKEN is required when CODE_HOST=github.")
