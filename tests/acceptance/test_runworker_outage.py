"""A database outage seen by real workers: the worker back first must not judge the others
dead on heartbeats that nobody could write, or it reruns jobs that are still running."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

from jobs import store
from jobs.models import JobAttempt, Status
from tests.support.database import database_url
from tests.support.job_states import wait_status
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_file
from tests.support.workers import wait_log, wait_registered

pytestmark = pytest.mark.django_db(transaction=True)

# A lease longer than the longest reconnection backoff (5 s), as in production (60 s).
TIMINGS = {"JOBS_WORKER_LEASE": "6", "JOBS_REAP_AFTER": "6"}


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    db = settings.DATABASES["default"]
    proxy = TcpProxy((db["HOST"], int(db["PORT"])))
    proxy.start()
    yield proxy
    proxy.cut()


def test_outage__worker_back_first_leaves_the_running_jobs_of_workers_still_reconnecting(
    proxy: TcpProxy, start_worker, tmp_path
):
    through_proxy = database_url(port=proxy.port)
    # A job that does not use the database: whether a job's own connection survives the
    # outage is the job's business (it fails and is retried); this is the reaper's.
    tries = tmp_path / "tries"
    job = store.enqueue("test.offline", {"seconds": 14, "tries": str(tries)})
    cut_off = start_worker(
        "--concurrency", "1", "--name", "cut-off", env={**TIMINGS, "DATABASE_URL": through_proxy}
    )
    wait_file(tries)

    proxy.cut()  # the database is gone for this worker; its job keeps running
    wait_log(cut_off, "retrying in 5.00s")  # ~8 s of outage: its heartbeat is older than a lease
    proxy.start()
    # A worker that reaches the database first (started now, like a replacement task).
    newcomer = start_worker("--concurrency", "1", "--name", "newcomer", env=TIMINGS)
    wait_registered("newcomer")

    job = wait_status(job.pk, Status.SUCCEEDED, timeout=40)
    assert (job.attempts, job.locked_by) == (1, "cut-off")
    assert tries.read_text().split() == ["1"]  # one try, never run again
    assert not JobAttempt.objects.exists()
    assert "Reaper took back" not in newcomer.log()
    assert "Database reachable again" in cut_off.log()
