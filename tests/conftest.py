"""Shared fixtures: real PostgreSQL (pytest-django's test database) and real
``manage.py runworker`` processes pointed at it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"


def wait_for(
    condition: Callable[[], object], timeout: float = 20.0, interval: float = 0.05, message: str = ""
):
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {message or condition}")
        time.sleep(interval)


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class WorkerProcess:
    """A ``manage.py runworker`` subprocess with its log captured to a file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runworker", *args],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so killpg reaches its children
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def kill_all(self) -> None:
        """SIGKILL the supervisor and its children at once: a machine losing the task."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def wait(self, timeout: float = 30.0) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill_all()
        self._log.close()


@pytest.fixture
def worker_env() -> dict[str, str]:
    """Environment for subprocesses: the test database and short timings."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings_test",
            "DATABASE_URL": database_url(),
            "JOBS_HEARTBEAT_INTERVAL": "0.5",
            "JOBS_WORKER_LEASE": "3",
            "JOBS_REAP_AFTER": "5",
            "JOBS_PROGRESS_INTERVAL": "0.1",
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


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


pytest_plugins = ["tests.moto_server"]
