"""Helpers for the admin page's tests: the four kinds of user, and jobs put into a state.

The page only reads rows, so its display tests set a state directly; the Retry and Cancel
tests go through the page, which calls the engine.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.utils import timezone

from jobs import store
from jobs.models import Job, JobAttempt, Status

PASSWORD = "correct-horse-battery"
PAGE = "/admin/platform/job/"


def make_user(username: str, *perms: str, staff: bool = True) -> User:
    """A staff user with exactly these ``platform`` permissions (codenames)."""
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="platform", codename__in=perms)
    )
    return user


def make_viewer() -> User:
    return make_user("viewer", "view_jobs")


def make_operator() -> User:
    return make_user("operator", "view_jobs", "change_job")


def make_job(status: str = Status.QUEUED, type_name: str = "test.noop", **fields: Any) -> Job:
    """Enqueue through the engine, then set the state's fields as the engine would have."""
    job = store.enqueue(type_name, fields.pop("payload", {}), dedupe_key=fields.pop("dedupe_key", None))
    now = timezone.now()
    state: dict[str, Any] = {"status": status}
    if status in (Status.RUNNING, Status.SUCCEEDED, Status.FAILED):
        state.update(attempts=1, started_at=now - timedelta(seconds=12), locked_by="host-a:101:0")
    if status == Status.RUNNING:
        state.update(heartbeat_at=now)
    if status in (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED):
        state.update(finished_at=now)
    if status == Status.SUCCEEDED:
        state.update(progress=100)
    state.update(fields)
    Job.objects.filter(pk=job.pk).update(**state)
    job.refresh_from_db()
    return job


def make_failed(type_name: str = "test.fail", tries: int = 3, **fields: Any) -> Job:
    """A job that failed for good after ``tries`` tries, each recorded with a traceback."""
    job = make_job(Status.FAILED, type_name, attempts=tries, error="RuntimeError: boom", **fields)
    for attempt in range(1, tries + 1):
        JobAttempt.objects.create(
            job=job,
            type=job.type,
            attempt=attempt,
            worker="host-a:101:0",
            started_at=job.started_at,
            error_class="RuntimeError",
            error=f"boom on try {attempt}",
            traceback=f'Traceback (most recent call last):\n  File "tasks.py", line {attempt}\nRuntimeError: boom {attempt}',
            outcome=Status.FAILED if attempt == tries else Status.QUEUED,
        )
    return job
