"""The rows a task's ``TaskResult`` is built from (``jobs.django_tasks.results``): the job
row's fields and whether it has failed tries, read by the database's driver for a whole
batch in one statement (a worker's child reads those of a batch before running it,
``get_result`` reads one)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from jobs.drivers import driver


class TaskRecord(NamedTuple):
    """A task's job row as its result is built from it, JSON parsed. A tuple, not a model
    instance: a worker's child makes one before every try, and a ``Job`` costs a third of
    a no-op task's time in the child to build."""

    pk: int
    type: str
    queue: str
    priority: int
    status: str
    payload: dict[str, Any]
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    locked_by: str | None
    result: Any


def read(job_ids: Sequence[int]) -> dict[int, tuple[TaskRecord, bool]]:
    """django.tasks tasks' rows (the fields their results need), each with whether it has
    failed tries, by id; ids without a row are left out. A worker reads them before every
    try of a task, so the driver reads a whole batch at once."""
    if not job_ids:
        return {}
    return {
        row.id: (
            TaskRecord(
                row.id,
                row.type,
                row.queue,
                row.priority,
                row.status,
                json.loads(row.payload),
                row.run_at,
                row.created_at,
                row.started_at,
                row.finished_at,
                row.locked_by,
                None if row.result is None else json.loads(row.result),
            ),
            row.tried,
        )
        for row in driver().task_rows(job_ids)
    }
