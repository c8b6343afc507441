"""Settings for the test suite: PostgreSQL, the test-only job types and tasks."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jobplatform")
# Production's defaults (DEBUG off), with a key for the tests only, and without the
# redirect to HTTPS: the test client and the live server speak plain HTTP. Worker processes
# started by the tests inherit these.
os.environ.setdefault("SECRET_KEY", "tests-only-" + "k" * 50)
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
# Qdrant's local mode in a folder of the test run's own (the workers it starts inherit it);
# the pipeline's tests give each test a folder of its own.
if not os.environ.get("QDRANT_PATH"):
    import atexit
    import shutil
    import tempfile

    os.environ["QDRANT_PATH"] = tempfile.mkdtemp(prefix="qdrant-tests-")
    atexit.register(shutil.rmtree, os.environ["QDRANT_PATH"], True)

from config.settings import *  # noqa: E402,F403
from config.settings import DATABASES, INSTALLED_APPS, TASKS  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jobs_app"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tasks (tests/tasks_backend/) on the default queue and on one that no job type uses, retried
# at once; one task with a budget and a timeout of its own.
TASKS = {
    "default": {
        **TASKS["default"],
        "QUEUES": ["default", "reports"],
        "OPTIONS": {
            "backoff": [0.1],
            "tasks": {
                "tests.tasks_backend.tasks.always_fails": {"attempts": 2},
                "tests.tasks_backend.tasks.sleepy": {"attempts": 2, "timeout": 0.5},
            },
        },
    }
}
# On the embedded default (DATABASE_URL=sqlite:///…; the driver conformance suite runs there
# too), a test database in a file, not in memory: SQLite's shared in-memory cache makes a
# second session fail at once on a table lock instead of waiting, unlike the embedded default.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}.test"}
