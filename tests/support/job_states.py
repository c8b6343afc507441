"""Jobs put into a state through the store, and waits on the states real workers write."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.utils import timezone

from jobs import store
from jobs.models import ACTIVE, Job
from tests.support.waiting import wait_for


def claim_one(worker: str, type_name: str = "test.noop", queue: str = "default") -> store.ClaimedJob:
    """Claim exactly one job; fails the test if none (or another type) comes back."""
    claimed = store.claim(worker, [queue], 1)
    assert len(claimed) == 1, f"expected one job to claim, got {claimed}"
    assert claimed[0].type == type_name
    return claimed[0]


def make_due(job_id: int) -> None:
    """Move a retry's run_at to now: the backoff has passed, and a worker's promotion has
    made it claimable again (``store.promote_due``)."""
    Job.objects.filter(pk=job_id).update(run_at=timezone.now() - timedelta(hours=1))
    store.promote_due()


def make_silent(job_id: int, seconds: float) -> None:
    """Age a running job's heartbeat, as if its worker went quiet ``seconds`` ago."""
    Job.objects.filter(pk=job_id).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


def finished(ids: Iterable[int]) -> bool:
    """True once none of these jobs is queued or running."""
    return not Job.objects.filter(pk__in=list(ids), status__in=ACTIVE).exists()


def wait_finished(ids: Iterable[int], timeout: float = 30.0) -> None:
    ids = list(ids)
    wait_for(lambda: finished(ids), timeout=timeout, interval=0.1, message=f"{len(ids)} jobs to finish")


def wait_status(job_id: int, status: str, timeout: float = 30.0) -> Job:
    return wait_for(
        lambda: Job.objects.filter(pk=job_id, status=status).first(),
        timeout=timeout,
        interval=0.05,
        message=f"job #{job_id} to be {status}",
    )
