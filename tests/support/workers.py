"""Real ``manage.py runworker`` processes, observed through their log and their registry row."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from jobs.models import Worker
from tests.support.database import database_url, on_mariadb
from tests.support.paths import ROOT
from tests.support.waiting import wait_for


def worker_environment() -> dict[str, str]:
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
            # The timers' slots are booked only by the tests of timers (tests/acceptance/
            # test_timers_fleet.py), which turn this on: elsewhere a sweep would run mid-test.
            "JOBS_SCHEDULER": "false",
        }
    )
    # The workers write the project's bytecode (__pycache__, ignored by git) as a deployed
    # image has it compiled: else every worker start compiles the project again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if on_mariadb():  # workers poll there: a short interval keeps every hand-off short
        env["JOBS_POLL_INTERVAL"] = "0.1"
    return env


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

    def signal_group(self, signum: int) -> None:
        """Signal the supervisor and every process it started at once, as systemd, a
        container runtime or a terminal's Ctrl-C does."""
        os.killpg(self.process.pid, signum)

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


def wait_log(worker: WorkerProcess, text: str, timeout: float = 30.0) -> str:
    """Until ``text`` appears in the worker's log; returns the log."""
    return wait_for(
        lambda: worker.log() if text in worker.log() else "",
        timeout=timeout,
        interval=0.05,
        message=f"{text!r} in the worker log",
    )


def wait_registered(*names: str, timeout: float = 30.0) -> None:
    """Until every named worker has its registry row (it is about to claim)."""
    wait_for(
        lambda: Worker.objects.filter(name__in=names, stopped_at=None).count() == len(names),
        timeout=timeout,
        interval=0.05,
        message=f"workers {names} to register",
    )
