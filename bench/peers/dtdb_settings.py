"""Minimal Django settings for the django-tasks-db harness (bench/peers/django_tasks_db_bench.py).

Database ``bench_django_tasks`` with persistent connections (CONN_MAX_AGE=None: Django's
default of 0 reconnects for nearly every task), DEBUG off, django-tasks-db's DatabaseBackend.
BENCH_APPLICATION_NAME tags the connections so the harness can tell when workers are up.
"""

import os

from bench.lib.postgres import peer_database

SECRET_KEY = "bench-only"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["django_tasks_db"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": peer_database("bench_django_tasks"),
        "USER": "postgres",
        "HOST": "127.0.0.1",
        "PORT": "5432",
        "CONN_MAX_AGE": None,
        "OPTIONS": {"application_name": os.environ.get("BENCH_APPLICATION_NAME", "dtdb-bench")},
    }
}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
