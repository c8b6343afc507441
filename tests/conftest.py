"""Shared fixtures: real PostgreSQL (pytest-django's test database) and real
``manage.py runworker`` processes pointed at it.

Code the tests share lives in ``tests/support/``; this file holds fixtures only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.workers import WorkerProcess, worker_environment

pytest_plugins = ["tests.moto_server"]


@pytest.fixture
def worker_env() -> dict[str, str]:
    """Environment for subprocesses: the test database and short timings."""
    return worker_environment()


@pytest.fixture
def start_worker(worker_env, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real workers; every one still running at the end is stopped."""
    started: list[WorkerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        worker = WorkerProcess(
            list(args), {**worker_env, **(env or {})}, tmp_path / f"worker-{len(started)}.log"
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
