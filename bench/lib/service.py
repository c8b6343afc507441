"""A local stand-in for the ECS service: ``runworker`` tasks started and stopped to a
desired count, each one a real process tree (supervisor, forkserver, children) reaching
PostgreSQL through PgBouncer. Stopping a task is ECS's: SIGTERM, then SIGKILL after the
stop timeout. Needs Django set up first.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib import pooled
from bench.lib.processes import Pool
from jobs.models import Job, Status
from tests.support.pgbouncer import PgBouncer


@dataclass
class Task:
    name: str
    pool: Pool
    started: float
    stopping_since: float | None = None
    held_at_stop: int = 0  # jobs running under it when it got SIGTERM
    stopped_by: str = ""  # "scale-in", or "shutdown" at the end of a run
    killed: bool = False  # SIGKILL at the stop timeout
    held_at_kill: int = 0  # jobs running under it then (the reaper takes them back)

    @property
    def process(self) -> subprocess.Popen:
        return self.pool.processes[0]


@dataclass
class Service:
    bouncer: PgBouncer
    logs: Path
    shutdown_timeout: float  # runworker --shutdown-timeout (ECS: stopTimeout less a margin)
    stop_timeout: float  # SIGKILL after this (ECS: the task definition's stopTimeout)
    seed: int = 7
    tasks: list[Task] = field(default_factory=list)
    stopping: list[Task] = field(default_factory=list)
    stopped: list[Task] = field(default_factory=list)
    _started: int = 0

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    @property
    def desired(self) -> int:
        return len(self.tasks)

    def scale_to(self, desired: int, why: str = "scale-in") -> None:
        while len(self.tasks) < desired:
            self._start()
        while len(self.tasks) > desired:
            # ECS picks the tasks to stop; any one will do here, busy or not.
            self._stop(self.tasks.pop(self._random.randrange(len(self.tasks))), why)

    def _start(self) -> None:
        name = f"task-{self._started}"
        self._started += 1
        env = pooled.pooled_environment(self.bouncer, name=name)
        args = ["--name", name, "--shutdown-timeout", f"{self.shutdown_timeout:g}"]
        self.tasks.append(
            Task(name, pooled.start_worker(env, *args, log=self.logs / f"{name}.log"), time.monotonic())
        )

    def _stop(self, task: Task, why: str) -> None:
        task.stopped_by = why
        task.held_at_stop = Job.objects.filter(status=Status.RUNNING, locked_by=task.name).count()
        task.process.send_signal(signal.SIGTERM)
        task.stopping_since = time.monotonic()
        self.stopping.append(task)

    def tend(self) -> None:
        """Collect tasks that exited; SIGKILL those past the stop timeout (as ECS would)."""
        for task in list(self.stopping):
            if task.process.poll() is not None:
                self.stopping.remove(task)
                self.stopped.append(task)
            elif (
                task.stopping_since is not None and time.monotonic() - task.stopping_since > self.stop_timeout
            ):
                task.process.kill()
        for task in self.tasks:
            if task.process.poll() is not None:
                raise RuntimeError(f"{task.name} exited on its own: see {self.logs / task.name}.log")

    def scale_ins(self) -> list[Task]:
        return [task for task in self.stopped + self.stopping if task.stopped_by == "scale-in"]

    def shutdown(self) -> None:
        self.scale_to(0, "shutdown")
        deadline = time.monotonic() + self.stop_timeout + 10
        while self.stopping and time.monotonic() < deadline:
            self.tend()
            time.sleep(0.1)
        for task in self.stopping:
            task.pool.stop(grace=0)
