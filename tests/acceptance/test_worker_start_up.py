"""What a worker loads as it starts, seen from real processes (tests/support/start_up.py):
every job type the platform declares, and neither the admin's pages, nor the domains'
services, nor the client libraries only those import; the admin still discovered where a
web process and the system checks need it; the garbage collector paused until Django is set
up, then on again with start-up's objects frozen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

import jobs
from jobs.models import Worker
from jobs.worker import child
from tests.support.paths import ROOT
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # each test starts a process

#: Imported by a worker that has run nothing yet, these would be start-up time for nothing:
#: admin pages (the URLconf discovers them), the services behind the domains' jobs (each job
#: imports its own when it runs) and the libraries only those use.
NOT_AT_START_UP = (
    "jobs.admin",
    "pipeline.admin",
    "pipeline.index_admin",
    "workspaces.admin",
    "django_q.admin",
    "pipeline.process",
    "pipeline.indexing",
    "pipeline.sweeper",
    "pipeline.vector_store",
    "workspaces.services.ingest",
    "workspaces.services.analysis",
    "workspaces.services.pull_requests",
    "workspaces.webhooks.tokens",
    "workspaces.credentials",
    "language_models.bedrock",
    "language_models.openai_compatible",
    "httpx",
    "jwt",
    "cryptography",
    "boto3",
    "botocore",
    "qdrant_client",
    "opentelemetry",
    "playwright",
)


def report(mode: str, tmp_path: Path, env: dict[str, str]) -> dict:
    path = tmp_path / f"{mode}.json"
    subprocess.run(
        [sys.executable, "-c", "from tests.support.start_up import main; main()", mode, str(path)],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
    return json.loads(path.read_text())


def run_python(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def test_worker__registers_every_job_type_the_platform_declares_as_a_process_that_imports_everything(
    worker_env, tmp_path
):
    from pipeline import job_types as pipeline_types
    from workspaces import job_types as workspace_types

    worker = report("worker", tmp_path, worker_env)["types"]
    everything = report("eager", tmp_path, worker_env)["types"]

    assert worker == everything  # the same names, each with the same declaration
    named = {
        value
        for module in (pipeline_types, workspace_types)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }
    assert named <= set(worker)


def test_worker__imports_no_admin_page_no_domain_service_and_no_client_library(worker_env, tmp_path):
    modules = set(report("worker", tmp_path, worker_env)["modules"])

    assert {"pipeline.tasks", "workspaces.tasks", "jobs.worker.supervisor"} <= modules
    loaded = sorted(
        module
        for module in modules
        if any(module == name or module.startswith(f"{name}.") for name in NOT_AT_START_UP)
    )
    assert loaded == []


def test_system_checks__discover_the_admin_and_check_every_registered_page(worker_env):
    """``manage.py check`` (and runserver, migrate) run the admin's checks on every page."""
    out = run_python(
        "import sys, django; django.setup()\n"
        "from django.contrib import admin\n"
        "from django.core import checks\n"
        "before = 'jobs.admin' in sys.modules\n"
        "errors = checks.run_checks(tags=[checks.Tags.admin])\n"
        "from jobs.models import Job\n"
        "from django_q.models import Schedule\n"
        "from pipeline.models import EmailMessage\n"
        "print(before, [admin.site.is_registered(m) for m in (Job, Schedule, EmailMessage)], errors)",
        worker_env,
    )
    assert out == "False [True, True, True] []"


def test_system_checks__report_a_broken_admin_page_that_only_discovery_imports(worker_env):
    out = run_python(
        "import django; django.setup()\n"
        "from django.core import checks\n"
        "import pipeline.admin as pages\n"  # discovery imports it again: nothing more
        "pages.EmailMessageAdmin.list_display = ('no_such_field',)\n"
        "print(sorted({error.id for error in checks.run_checks(tags=[checks.Tags.admin])}))",
        worker_env,
    )
    assert out == "['admin.E108']"


@pytest.mark.parametrize("entry_point", ["config.wsgi", "config.asgi"])
def test_web_entry_points__discover_the_admin_and_django_q2s_lists_before_the_first_request(
    worker_env, entry_point
):
    out = run_python(
        f"import {entry_point}, sys\n"
        "from django.contrib import admin\n"
        "from django_q.models import Failure, OrmQ, Schedule, Success\n"
        "from jobs.models import Job\n"
        "print([type(admin.site._registry[m]).__name__ for m in (Schedule, Success, Failure, OrmQ, Job)])",
        worker_env,
    )
    assert out == str(
        [
            "TimerScheduleAdmin",
            "SchedulerTaskAdmin",
            "SchedulerFailAdmin",
            "SchedulerQueueAdmin",
            "JobAdmin",
        ]
    )


def test_manage_py__sets_django_up_without_the_collector_then_turns_it_on_with_start_up_frozen(worker_env):
    out = run_python(
        "import gc, runpy, sys\n"
        "import django\n"
        "seen = []\n"
        "from django.apps import AppConfig\n"
        "ready = AppConfig.ready\n"
        "AppConfig.ready = lambda self: (seen.append(gc.isenabled()), ready(self))[1]\n"
        "sys.argv = ['manage.py', 'shell', '-c', 'import gc; print(gc.isenabled(), gc.get_freeze_count() > 10000)']\n"
        "runpy.run_path('manage.py', run_name='__main__')\n"
        "print(set(seen))",
        worker_env,
    )
    assert out.splitlines()[-2:] == ["True True", "{False}"]


def test_engine_admin_imported_before_discovery__still_adapts_django_q2s_lists(worker_env):
    """A module (a test, a script) may import the engine's admin before the URLconf does."""
    out = run_python(
        "import django; django.setup()\n"
        "import jobs.admin\n"
        "from django.contrib import admin\n"
        "admin.autodiscover()\n"
        "from django_q.models import Schedule, Success\n"
        "print([type(admin.site._registry[m]).__name__ for m in (Schedule, Success)])",
        worker_env,
    )
    assert out == "['TimerScheduleAdmin', 'SchedulerTaskAdmin']"


@pytest.mark.django_db(transaction=True)
def test_worker__forks_its_forkserver_and_resource_tracker_starting_no_new_interpreter(start_worker):
    """Every process a worker starts is a fork of it: the same command line, none running
    ``multiprocessing``'s own ``-c`` start of a forkserver or a resource tracker."""
    worker = start_worker("--concurrency", "2", "--name", "forks")
    wait_for(lambda: Worker.objects.filter(name="forks", stopped_at=None).exists(), timeout=60)

    def descendants(pid: int) -> list[int]:
        found = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]
        return found + [grandchild for child in found for grandchild in descendants(child)]

    wait_for(lambda: len(descendants(worker.pid)) == 4, timeout=30)  # tracker, forkserver, 2 children
    own = Path(f"/proc/{worker.pid}/cmdline").read_bytes()
    assert {Path(f"/proc/{pid}/cmdline").read_bytes() for pid in descendants(worker.pid)} == {own}


@pytest.mark.django_db(transaction=True)
def test_worker__children_connect_to_the_database_before_their_first_job(start_worker):
    """A child opens its connection as it starts, not in its first job's try: with no job
    to run (and no timer), each child still holds one connection to the database."""
    worker = start_worker("--concurrency", "2", "--name", "eager", env={"JOBS_SCHEDULER": "false"})
    port = int(settings.DATABASES["default"]["PORT"])

    def children() -> list[int]:  # the forkserver's: grandchildren of the supervisor
        return [pid for helper in _children(worker.pid) for pid in _children(helper)]

    wait_for(lambda: len(children()) == 2, timeout=60, message="two children")
    wait_for(
        lambda: [_connections_to(pid, port) for pid in children()] == [1, 1],
        timeout=30,
        message="each child connected to the database",
    )


@pytest.mark.django_db(transaction=True)
def test_worker__a_child_reconnects_for_a_batch_once_its_connection_outlived_its_age(start_worker, tmp_path):
    """Jobs in a row share the child's connection; a connection past ``CONN_MAX_AGE`` while
    the child waited is closed before the next batch, not used stale."""
    sessions = tmp_path / "sessions"

    def lines() -> list[dict]:
        return [json.loads(line) for line in sessions.read_text().splitlines()] if sessions.exists() else []

    jobs.enqueue("test.session", {"path": str(sessions)})
    jobs.enqueue("test.session", {"path": str(sessions)})
    start_worker("--concurrency", "1", env={"JOBS_SCHEDULER": "false", "DB_CONN_MAX_AGE": "3"})
    wait_for(lambda: len(lines()) == 2, timeout=60, message="the first two jobs")
    first, second = lines()
    assert (first["pid"], first["backend"]) == (second["pid"], second["backend"])

    past_its_age = second["at"] + 3 + child.RECHECK_AFTER
    wait_for(lambda: time.time() > past_its_age, timeout=30, message="the connection's age to pass")
    jobs.enqueue("test.session", {"path": str(sessions)})
    wait_for(lambda: len(lines()) == 3, timeout=30, message="the third job")
    third = lines()[2]
    assert third["pid"] == second["pid"], "the same child"
    assert third["backend"] != second["backend"], "a new connection"


def _children(pid: int) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]


def _connections_to(pid: int, port: int) -> int:
    """Established TCP connections of process ``pid`` to ``port``."""
    try:
        inodes = {
            os.readlink(f"/proc/{pid}/fd/{fd}")[len("socket:[") : -1]
            for fd in os.listdir(f"/proc/{pid}/fd")
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")
        }
    except OSError:
        return 0  # gone, or a descriptor closed while listed
    established = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if fields[3] == "01" and remote_port == port and fields[9] in inodes:
                established += 1
    return established


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
