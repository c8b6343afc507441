"""The rows a task's ``TaskResult`` is built from (``jobs.django_tasks.results``), read by
the database's driver in one statement: the job row's fields and whether it has failed
tries (``get_result`` reads one), or, for the tries a worker's child is about to start, the
few fields their claim did not bring, for a whole batch."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.drivers import driver
from jobs.drivers.protocol import TaskRow, TaskTryRow


def read(job_ids: Sequence[int]) -> dict[int, TaskRow]:
    """django.tasks tasks' rows (the fields their results need, JSON still as text, and
    whether each has failed tries), by id; ids without a row are left out. A worker reads
    them before every try of a task, so the driver reads a whole batch at once. The
    driver's tuples as they come: a ``Job`` instance of each would cost a third of a no-op
    task's time in the child."""
    if not job_ids:
        return {}
    return {row.id: row for row in driver().task_rows(job_ids)}


def read_tries(job_ids: Sequence[int]) -> dict[int, TaskTryRow]:
    """What the tries about to start of these claimed tasks need of their rows, by id: a
    worker's child reads those of a batch before running it."""
    if not job_ids:
        return {}
    return {row.id: row for row in driver().task_try_rows(job_ids)}
