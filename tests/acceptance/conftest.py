"""Helpers for the acceptance tests: real ``runworker`` processes against the test database,
observed only through the rows they write and the lines they log."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from jobs.models import ACTIVE, Job, Worker
from tests.conftest import WorkerProcess, wait_for


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


def wait_registered(*names: str, timeout: float = 30.0) -> None:
    """Until every named worker has its registry row (it is about to claim)."""
    wait_for(
        lambda: Worker.objects.filter(name__in=names, stopped_at=None).count() == len(names),
        timeout=timeout,
        interval=0.05,
        message=f"workers {names} to register",
    )


def wait_log(worker: WorkerProcess, text: str, timeout: float = 30.0) -> str:
    return wait_for(
        lambda: worker.log() if text in worker.log() else "",
        timeout=timeout,
        interval=0.05,
        message=f"{text!r} in the worker log",
    )


def wait_file(path: Path, timeout: float = 30.0) -> None:
    """A test.sleep job writes its marker file when its body starts."""
    wait_for(path.exists, timeout=timeout, interval=0.02, message=f"{path.name} to be written")
