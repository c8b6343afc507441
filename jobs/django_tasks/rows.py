"""The rows a task's ``TaskResult`` is built from (``jobs.django_tasks.results``): the job
row's fields and whether it has failed tries, read by the database's driver for a whole
batch in one statement (a worker's child reads those of a batch before running it,
``get_result`` reads one)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection

from jobs.drivers import driver
from jobs.models import Job


def read(job_ids: Sequence[int]) -> dict[int, tuple[Job, bool]]:
    """django.tasks tasks' rows (the fields their results need), each with whether it has
    failed tries, by id; ids without a row are left out. A worker reads them before every
    try of a task, so the driver reads a whole batch at once."""
    if not job_ids:
        return {}
    found = {}
    for row in driver().task_rows(job_ids):
        job = Job(
            id=row.id,
            type=row.type,
            queue=row.queue,
            priority=row.priority,
            status=row.status,
            payload=json.loads(row.payload),
            run_at=row.run_at,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            locked_by=row.locked_by,
            result=None if row.result is None else json.loads(row.result),
        )
        job._state.adding = False
        job._state.db = connection.alias
        found[row.id] = (job, row.tried)
    return found
