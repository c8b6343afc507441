"""The django-tasks-db harness's tasks: a no-op, and a stamp for wake-up latency."""

from common import stamp
from django.tasks import task


@task
def noop() -> None:
    pass


@task
def stamp_task(path: str, t0: float) -> None:
    stamp(path, t0)
