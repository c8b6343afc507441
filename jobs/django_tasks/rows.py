"""The rows a task's ``TaskResult`` is built from (``jobs.django_tasks.results``): the job
row's fields and whether it has failed tries, read by the database's driver for a whole
batch in one statement (a worker's child reads those of a batch before running it,
``get_result`` reads one)."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.drivers import driver
from jobs.drivers.protocol import TaskRow


def read(job_ids: Sequence[int]) -> dict[int, TaskRow]:
    """django.tasks tasks' rows (the fields their results need, JSON still as text, and
    whether each has failed tries), by id; ids without a row are left out. A worker reads
    them before every try of a task, so the driver reads a whole batch at once. The
    driver's tuples as they come: a ``Job`` instance of each would cost a third of a no-op
    task's time in the child."""
    if not job_ids:
        return {}
    return {row.id: row for row in driver().task_rows(job_ids)}
