"""Helpers for the admin page's tests: the four kinds of user, and jobs put into a state.

The page only reads rows, so its display tests set a state directly; the Retry and Cancel
tests go through the page, which calls the engine.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission, User

from jobs import registry
from jobs.models import Job, Status
from tests.factories import JobAttemptFactory, JobFactory

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
    """A job of a known type in ``status``, with the fields the engine would have set."""
    registry.get(type_name)  # an unknown type is a mistake in the test
    traits = {} if status == Status.QUEUED else {status: True}
    return JobFactory(type=type_name, **traits, **fields)


def make_failed(type_name: str = "test.fail", tries: int = 3, **fields: Any) -> Job:
    """A job that failed for good after ``tries`` tries, each recorded with a traceback."""
    job = make_job(Status.FAILED, type_name, attempts=tries, **fields)
    for attempt in range(1, tries + 1):
        JobAttemptFactory(
            job=job, attempt=attempt, outcome=Status.FAILED if attempt == tries else Status.QUEUED
        )
    return job
