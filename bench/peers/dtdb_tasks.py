"""The django-tasks-db harness's tasks: a no-op, and a stamp for wake-up latency."""

from django.tasks import task

from bench.lib.harness import stamp


@task
def noop() -> None:
    pass


@task
def stamp_task(path: str, t0: float) -> None:
    stamp(path, t0)
