"""A fleet of real ``runworker`` processes through PgBouncer in transaction pooling mode:
claims, acknowledgements, heartbeats and enqueues go through the pooler, LISTEN over a
direct connection (or none: the worker polls). Workers killed with SIGKILL mid-drain lose
no job, and nothing a worker or a timer does stays behind in a pooled server session.

The test starts its own PgBouncer (config, auth file, free port) in front of the test
database; ``make test`` installs Debian's pgbouncer when it is missing.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from jobs import store
from jobs.models import ACTIVE, Job, JobAttempt, Status
from tests.jobs_app.models import Execution
from tests.support import pgbouncer
from tests.support.database import database_url
from tests.support.paths import ROOT
from tests.support.waiting import wait_for
from tests.support.workers import wait_log, wait_registered, worker_environment

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.postgres_only("PgBouncer pools PostgreSQL connections"),
    pytest.mark.skipif(
        pgbouncer.executable() is None, reason="pgbouncer is not installed (make test installs it)"
    ),
]

POOL_SIZE = 4  # server connections the pooler may open, for 4 workers × 3 client connections
SERVER_STATES = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")  # SHOW POOLS


@pytest.fixture
def bouncer() -> Iterator[pgbouncer.PgBouncer]:
    with pgbouncer.PgBouncer(pool_size=POOL_SIZE) as running:
        yield running


def _database() -> str:
    return connection.settings_dict["NAME"]


def _pooled(bouncer: pgbouncer.PgBouncer, *, listen: bool) -> dict[str, str]:
    """A worker's environment: every query through the pooler; LISTEN direct, or polling."""
    env = {
        "DATABASE_URL": bouncer.url(_database()),
        "JOBS_DATABASE_POOL_MODE": "transaction",
        # Only the victims die here: a lease that outlasts any stall of a loaded machine
        # keeps a slow survivor from being taken for dead (and its jobs from running twice).
        "JOBS_WORKER_LEASE": "10",
        "JOBS_REAP_AFTER": "20",
        "JOBS_POLL_INTERVAL": "0.2",
    }
    if listen:
        env["JOBS_LISTEN_DATABASE_URL"] = database_url()
    return env


def _run_through(bouncer: pgbouncer.PgBouncer, code: str) -> subprocess.Popen:
    """``manage.py shell -c code`` with its database behind the pooler: a producer."""
    env = {**_pooled(bouncer, listen=False), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    return subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={**worker_environment(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _succeeded() -> int:
    return Job.objects.filter(status=Status.SUCCEEDED).count()


def _listeners() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
        )
        return cursor.fetchone()[0]


class PoolWatch(threading.Thread):
    """The most client connections PgBouncer carried at once, and the most server ones."""

    def __init__(self, bouncer: pgbouncer.PgBouncer, database: str) -> None:
        super().__init__(daemon=True)
        self.bouncer, self.database = bouncer, database
        self.clients = self.servers = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            for pool in self.bouncer.show("POOLS"):
                if pool["database"] == self.database:
                    clients = sum(int(str(pool[key])) for key in ("cl_active", "cl_waiting"))
                    servers = sum(int(str(pool[key])) for key in SERVER_STATES)
                    self.clients, self.servers = max(self.clients, clients), max(self.servers, servers)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def test_fleet_through_pgbouncer__workers_killed_while_draining_lose_no_job(bouncer, start_worker):
    names = ["listening-victim", "polling-victim", "listening-survivor", "polling-survivor"]
    victims, survivors = names[:2], names[2:]
    workers = {
        name: start_worker(
            "--concurrency", "2", "--name", name, env=_pooled(bouncer, listen="listening" in name)
        )
        for name in names
    }
    wait_registered(*names)
    wait_for(lambda: _listeners() == 2, timeout=30, message="the two listening workers to LISTEN directly")
    assert "polls: LISTEN needs a session" in wait_log(workers["polling-victim"], "started")
    watch = PoolWatch(bouncer, _database())
    watch.start()

    # The producer enqueues through the pooler too: one by one, then in bulk.
    producer = _run_through(
        bouncer,
        "import jobs\n"
        "for _ in range(200): jobs.enqueue('test.record', {'sleep': 0.01})\n"
        "print(jobs.enqueue_many('test.record', [{'sleep': 0.01} for _ in range(1300)]))",
    )
    output, _ = producer.communicate(timeout=120)
    assert producer.returncode == 0 and output.strip().endswith("1300"), output
    wait_for(lambda: _succeeded() >= 200, timeout=120, message="the fleet to get going")

    for name in victims:
        wait_for(
            lambda: Job.objects.filter(status=Status.RUNNING, locked_by=name).exists(),  # noqa: B023
            timeout=30,
            message=f"{name} to hold jobs",
        )
        workers[name].kill_all()  # SIGKILL to the supervisor and its children at once
    held = set(Job.objects.filter(status=Status.RUNNING, locked_by__in=victims).values_list("pk", flat=True))
    assert held, "the victims died holding no job"
    assert Job.objects.filter(status=Status.QUEUED).exists()  # mid-drain

    wait_for(
        lambda: not Job.objects.filter(status__in=ACTIVE).exists(), timeout=240, message="every job to finish"
    )
    watch.stop()

    # Every job succeeded; none is left queued or running.
    assert _succeeded() == Job.objects.count() == 1500
    # Each job's successful try recorded its run exactly once, and no try ran to its end twice.
    finals = dict(Job.objects.values_list("pk", "attempts"))
    runs = Counter(Execution.objects.values_list("job_id", "attempt"))
    assert all(runs[(job_id, attempt)] == 1 for job_id, attempt in finals.items())
    assert max(runs.values()) == 1, "a try ran to its end twice"
    # Earlier tries ended only on the killed workers, taken back by the survivors' reaper;
    # the jobs the victims held finished on a survivor.
    lost = set(JobAttempt.objects.values_list("job_id", "attempt", "worker", "error_class"))
    assert {(worker, error) for *_, worker, error in lost} <= {(name, "WorkerLost") for name in victims}
    assert {(job_id, attempt) for job_id, attempt in runs if attempt != finals[job_id]} <= {
        (job_id, attempt) for job_id, attempt, *_ in lost
    }
    assert held <= {job_id for job_id, *_ in lost}
    assert set(Job.objects.filter(pk__in=held).values_list("locked_by", flat=True)) <= set(survivors)
    for name in survivors:
        assert workers[name].process.poll() is None, workers[name].log()

    # It all went through the pooler, and it pooled: more clients than server sessions.
    stats = next(row for row in bouncer.show("STATS") if row["database"] == _database())
    assert int(str(stats["total_xact_count"])) > 1500
    assert watch.clients > POOL_SIZE >= watch.servers


def test_pooled_worker_and_sweep__leave_no_session_state_in_the_server_sessions(start_worker):
    """Behind a pooler of two server sessions, whatever a worker or a timer left in one (a
    SET, a prepared statement, a LISTEN, an advisory lock) is what the next clients find.

    Two, not one: a timer step holds its lock in a transaction of a session of its own
    while its work runs on the main connection, so it needs two server sessions at once."""
    with pgbouncer.PgBouncer(pool_size=2) as pair:
        worker = start_worker("--concurrency", "2", "--name", "pooled", env=_pooled(pair, listen=False))
        wait_registered("pooled")
        ids = [store.enqueue("test.record", {}).pk for _ in range(50)]
        ids.append(store.enqueue("test.flaky", {"fail_times": 1}).pk)  # a failed try and its retry
        wait_for(
            lambda: Job.objects.filter(pk__in=ids, status=Status.SUCCEEDED).count() == len(ids),
            timeout=60,
            message="the jobs to succeed",
        )
        sweep = _run_through(pair, "from django.core.management import call_command; call_command('sweep')")
        output, _ = sweep.communicate(timeout=120)
        assert sweep.returncode == 0 and "failed:" not in output, output
        worker.stop()

        # Two clients, each inside a transaction at the same time: one server session each.
        found = []
        with (
            psycopg.connect(pair.url(_database()), prepare_threshold=None) as first,
            psycopg.connect(pair.url(_database()), prepare_threshold=None) as second,
        ):
            for client in (first, second):
                found.append(client.execute(SESSION_STATE).fetchone())
            assert found[0][0] != found[1][0], "both clients got the same server session"
        assert [state[1:] for state in found] == [("on", "0", "read committed", 0, 0, 0)] * 2


# What a server session carries from one client to the next, and its backend's pid.
SESSION_STATE = """
SELECT pg_backend_pid(), current_setting('synchronous_commit'), current_setting('statement_timeout'),
       current_setting('default_transaction_isolation'),
       (SELECT count(*) FROM pg_prepared_statements),
       (SELECT count(*) FROM pg_listening_channels()),
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())
"""
