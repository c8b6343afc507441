"""PostgreSQL restarts while workers drain a backlog: they reconnect on their own, no job
is lost, none runs twice to completion, and work resumes (how soon is a figure of
``python -m bench.throughput --only recovery``, printed here for information).

Restarts the local cluster (``pg_ctlcluster … restart``), which breaks every other
connection to it, so it runs only when ``TEST_RESTART_POSTGRES=1`` (``make test`` sets it)
and as root with a local cluster; it is skipped elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Count

import jobs
from jobs.models import Job, Status
from tests.jobs_app.models import Execution
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.serial,  # the restart breaks every other test's connections
    pytest.mark.postgres_only("restarts the PostgreSQL cluster"),
]


def _cluster_version() -> str | None:
    root = Path("/etc/postgresql")
    if (
        os.environ.get("TEST_RESTART_POSTGRES") != "1"
        or os.geteuid() != 0
        or not shutil.which("pg_ctlcluster")
        or not root.is_dir()
    ):
        return None
    versions = sorted(p.name for p in root.iterdir() if (p / "main").is_dir())
    return versions[-1] if versions else None


def _succeeded() -> int:
    try:
        return Job.objects.filter(status=Status.SUCCEEDED).count()
    except Exception:  # noqa: BLE001 - the test's own connection breaks with the restart
        connection.close()
        return -1


def test_workers_survive_a_postgres_restart_without_losing_or_repeating_jobs(start_worker):
    version = _cluster_version()
    if version is None:
        pytest.skip("set TEST_RESTART_POSTGRES=1 (make test does), as root with a local cluster")
    # Jobs of 10 ms: the workers' four children run at most 400 a second, so the backlog
    # outlasts the restart (7.5 s of work; the restart comes after 300). With 2 ms jobs a
    # quick machine could finish them all before the restart broke a connection, and the
    # throughput awaited after it could never come.
    total = 3000
    jobs.enqueue_many("test.record", [{"sleep": 0.01} for _ in range(total)])
    # A lease longer than the workers' longest reconnect wait (5 s), so that no worker is
    # taken for dead while it waits for the database to come back.
    calm = {"LOG_LEVEL": "WARNING", "JOBS_WORKER_LEASE": "20", "JOBS_REAP_AFTER": "30"}
    workers = [start_worker(env=calm) for _ in range(2)]
    wait_for(lambda: _succeeded() >= 300, timeout=60, message="workers to get going")

    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True, timeout=120
    )
    restarted = time.monotonic()
    connection.close()
    baseline = wait_for(lambda: _succeeded() + 1, timeout=30, message="the database to answer") - 1
    # The deadline only stops a hung test: a worker that never reconnects leaves it unmet.
    wait_for(lambda: _succeeded() >= baseline + 100, timeout=60, message="throughput to come back")
    recovered_after = time.monotonic() - restarted

    wait_for(lambda: _succeeded() == total, timeout=120, message="every job to succeed")
    runs_per_job = Execution.objects.values("job_id").annotate(runs=Count("id"))
    assert runs_per_job.count() == total, "a job never ran to completion"
    assert not runs_per_job.filter(runs__gt=1).exists(), "a job ran to completion twice"
    for worker in workers:
        assert worker.process.poll() is None, worker.log()
        assert "Database unreachable" in worker.log() or "Lost the LISTEN connection" in worker.log()
    print(f"work resumed {recovered_after:.1f}s after the restart")
