"""The engine's settings and their defaults, for a project that sets none of them.

This project reads every one from the environment (``config/settings.py``, with these same
defaults); another Django project that only adds ``jobs`` to ``INSTALLED_APPS`` (say, to
run its ``django.tasks`` on ``runworker``) gets these. ``JobsConfig.ready`` fills in what
the settings module leaves out.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "JOBS_POLL_INTERVAL": 1.0,
    "JOBS_HEARTBEAT_INTERVAL": 15.0,
    "JOBS_REAP_AFTER": 300.0,
    "JOBS_WORKER_LEASE": 60.0,
    "JOBS_SHUTDOWN_TIMEOUT": 120.0,
    "JOBS_PROGRESS_INTERVAL": 0.5,
    "JOBS_PREFETCH_WINDOW": 0.02,
    "JOBS_MAX_PREFETCH": 32,
    "JOBS_ACK_BATCH": 32,
    "JOBS_PREPARED_STATEMENTS": True,
    "JOBS_WORKER_ASYNC_COMMIT": True,
    "DATABASE_POOL_MODE": "session",
    "JOBS_LISTEN_DATABASE": None,
    "JOBS_KEEP_FINISHED_DAYS": 14.0,
    "JOBS_PRUNE_BATCH": 5000,
    "JOBS_MAX_PAYLOAD_BYTES": 64 * 1024,
    "JOBS_MAX_PAYLOAD_DEPTH": 32,
    "JOBS_MAX_RUN_AT_DAYS": 365.0,
    "JOBS_MAX_RETRY_LATER_SECONDS": 6 * 3600.0,
    "JOBS_ADMIN_TEXT_CHARS": 20_000,
    "JOBS_CLOUDWATCH_NAMESPACE": "",
    "JOBS_METRICS_WINDOW": 300.0,
    "JOBS_METRICS_TOKEN": "",
    "JOBS_METRICS_ALLOWED_IPS": [],
    "JOBS_SCHEDULER": True,
    "JOBS_SCHEDULE_GRACE": 60.0,
    "JOBS_SCHEDULE_CATCH_UP_WINDOW": 86400.0,
    "JOBS_SCHEDULE_CLOCK_OFFSET": 0.0,
    "AWS_REGION": "eu-central-1",
    "AWS_ENDPOINT_URL": "",
}


def fill_in_defaults() -> None:
    """Give every engine setting the project leaves out its default."""
    for name, value in DEFAULTS.items():
        if not hasattr(settings, name):
            setattr(settings, name, value)
