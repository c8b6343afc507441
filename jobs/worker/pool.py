"""Child processes and the lanes that own them.

A lane is a set of queues with a number of slots (one child per slot), e.g.
``--queue ai:1``: one kind of work cannot take another lane's slots. Children come from a
forkserver that imported Django once, so a replacement starts in milliseconds and never
inherits the supervisor's database sockets.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field

from jobs.store import ClaimedJob

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["jobs.worker.preload"])


class Child:
    """One child process and the job it is running, if any."""

    def __init__(self, lane: Lane) -> None:
        from jobs.worker import child

        self.lane = lane
        self.conn, theirs = _context.Pipe()
        self.process = _context.Process(target=child.main, args=(theirs,), daemon=True)
        self.process.start()
        theirs.close()
        self.job: ClaimedJob | None = None
        self.started = 0.0
        self.deadline: float | None = None

    def start(self, job: ClaimedJob, worker: str, timeout: float | None) -> None:
        self.conn.send((job.id, job.type, job.payload, job.attempt, job.max_attempts, worker))
        self.job = job
        self.started = time.monotonic()
        self.deadline = self.started + timeout if timeout else None

    def finish(self) -> tuple[ClaimedJob, float]:
        job, took = self.job, time.monotonic() - self.started
        self.job, self.deadline = None, None
        assert job is not None
        return job, took

    def kill(self) -> None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.kill()
        self.conn.close()

    def exit_description(self) -> str:
        self.process.join(timeout=1)
        code = self.process.exitcode
        if code is None:
            return "stopped answering"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"


@dataclass
class Lane:
    queues: list[str]
    slots: int
    children: list[Child] = field(default_factory=list)
    buffer: deque[ClaimedJob] = field(default_factory=deque)
    maybe_work: bool = True
    # Moving average of how long a job of this lane takes; bounds the prefetch.
    average_duration: float | None = None

    @property
    def label(self) -> str:
        return f"{','.join(self.queues)}:{self.slots}"

    def spawn(self) -> None:
        while len(self.children) < self.slots:
            self.children.append(Child(self))

    def replace(self, dead: Child) -> None:
        self.children.remove(dead)
        self.spawn()

    @property
    def idle(self) -> list[Child]:
        return [child for child in self.children if child.job is None]

    @property
    def busy(self) -> list[Child]:
        return [child for child in self.children if child.job is not None]

    def prefetch_allowance(self, window: float, maximum: int) -> int:
        """Jobs to hold beyond the free slots: no more than the lane can start within
        ``window`` seconds at its recent pace, so an idle worker elsewhere is never kept
        waiting on jobs that this one is merely holding."""
        if not self.average_duration or maximum <= 0:
            return 0
        return min(maximum, int(self.slots * window / max(self.average_duration, 1e-6)))

    def observe(self, took: float) -> None:
        previous = self.average_duration
        self.average_duration = took if previous is None else previous * 0.9 + took * 0.1
