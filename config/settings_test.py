"""Settings for the test suite: PostgreSQL, the test-only job types and tasks."""

import ipaddress
import os
import tempfile
from pathlib import Path

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jobplatform")
# Production's defaults (DEBUG off), with a key for the tests only, and without the
# redirect to HTTPS: the test client and the live server speak plain HTTP. Worker processes
# started by the tests inherit these.
os.environ.setdefault("SECRET_KEY", "tests-only-" + "k" * 50)
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
# The var/ of the test process (blobs, checkouts, Qdrant's local mode, static files) in a
# folder of its own, which the workers it starts inherit. A pytest-xdist worker (gw0, gw1)
# makes its own instead of using its parent's: two processes cannot open one Qdrant local
# folder, and both test databases have a repository 1 whose checkout is named after its id.
# The pipeline's tests give each test folders of its own.
_PROCESS = os.environ.get("PYTEST_XDIST_WORKER", "main")
if not os.environ.get("VAR_DIR") or os.environ.get("TEST_VAR_DIR_OF", _PROCESS) != _PROCESS:
    import atexit
    import shutil
    import tempfile

    os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix=f"var-tests-{_PROCESS}-")
    os.environ["TEST_VAR_DIR_OF"] = _PROCESS
    atexit.register(shutil.rmtree, os.environ["VAR_DIR"], True)

from config.settings import *  # noqa: E402,F403
from config.settings import DATABASES, INSTALLED_APPS, Q_CLUSTER, TASKS  # noqa: E402

# The tests' git servers and provider stand-ins listen on this machine over plain HTTP, and
# their repositories live in temporary folders: allowed here, by name, as an operator would.
LOCAL_TEST_HOSTS = ["localhost", "127.0.0.1"]
CREDENTIALS_PLAIN_HTTP_HOSTS = LOCAL_TEST_HOSTS
PROVIDER_ALLOWED_HOSTS = LOCAL_TEST_HOSTS
PROVIDER_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]
REPOSITORY_LOCAL_ROOTS = [Path(tempfile.gettempdir()).resolve()]

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jobs_app"]
# django-q2's guard loop calls its scheduler once 30 s of guard cycles have passed: a
# qcluster started by a test with a cycle of 30 s schedules on its first turn.
Q_CLUSTER = {**Q_CLUSTER, "guard_cycle": float(os.environ.get("TEST_Q_GUARD_CYCLE", "0.5"))}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tasks (tests/tasks_backend/) on the default queue, on the pipeline's mail queue and on one
# that no job type uses, retried at once; one task with a budget and a timeout of its own.
TASKS = {
    "default": {
        **TASKS["default"],
        "QUEUES": ["default", "mail", "reports"],
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
