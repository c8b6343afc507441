"""The django.tasks workload's tasks: a no-op, and a stamp for wake-up latency.

Plain ``django.tasks`` code, the same module for every backend that runs the workload
(django-tasks-db in bench/.peers-venv, our ``jobs.backends.JobsBackend`` in the project
venv), so both run the very same functions through the very same API.
"""

from django.tasks import task

from bench.lib.harness import stamp


@task
def noop() -> None:
    pass


@task
def stamp_task(path: str, t0: float) -> None:
    stamp(path, t0)
