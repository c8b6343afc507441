"""A fresh Django 6 project that takes the engine only as its django.tasks backend: it
installs ``jobs`` and sets ``TASKS``, and sets none of the engine's own settings. The test
that runs it (``test_contract.py``) gives it a database of its own in FRESH_DATABASE."""

import os

SECRET_KEY = "a-fresh-project"
INSTALLED_APPS = ["jobs"]
DATABASES = {
    "default": {
        # PostgreSQL, or MariaDB with Django's defaults (utf8mb4, READ COMMITTED) and no options.
        "ENGINE": os.environ.get("FRESH_DATABASE_ENGINE", "django.db.backends.postgresql"),
        "NAME": os.environ["FRESH_DATABASE"],
        "USER": os.environ.get("FRESH_DATABASE_USER", "postgres"),
        "HOST": os.environ.get("FRESH_DATABASE_HOST", "127.0.0.1"),
        "PORT": os.environ.get("FRESH_DATABASE_PORT", "5432"),
    }
}
TASKS = {"default": {"BACKEND": "jobs.backends.JobsBackend"}}
