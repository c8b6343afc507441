"""Child processes and the lanes that own them.

A lane is a set of queues with a number of slots (one child per slot), e.g.
``--queue ai:1``: one kind of work cannot take another lane's slots. A lane serving several
queues (a plain ``runworker``: every queue, two slots) keeps a fair share: no queue may
hold more than ``slots - 1`` of its children, so however long one queue's jobs run, a slot
is left for the others; except that while no other queue of the lane may have due jobs,
jobs known to be short (``Lane.known_short``) may borrow the reserved slots, which come
back within one such job once another queue has work. Children come from a forkserver
forked from the supervisor once Django is set up (``jobs.worker.forkserver``), so a child
starts in milliseconds and never inherits the supervisor's database sockets.

A child runs one job at a time. Jobs that take well under the prefetch window (a few
milliseconds) go to a child a few at a time, so the supervisor pays one message per batch
instead of one per job; how many is bounded by the window, so a batch never holds more
work than the child finishes within it.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jobs.conf import jobs_settings
from jobs.store import ClaimedJob
from jobs.worker import messages
from jobs.worker.messages import CURRENT, STARTED, FromChild, RunBatch
from jobs.worker.outcome import Outcome
from jobs.worker.progress import ProgressSlot

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["jobs.worker.preload"])

# The most jobs one message to a child carries (the window bounds it first): 64 rather than
# 16 halves the supervisor's CPU per no-op job (bench.throughput, 2026-12-05).
MAX_BATCH = 64


class Child:
    """One child process and the batch of jobs it is running, if any."""

    def __init__(self, lane: Lane, worker: str) -> None:
        from jobs.worker import child

        self.lane = lane
        self.state = _context.RawArray("d", 2)  # shared: index of the running job, its start
        # shared: the running job's latest report and its log so far
        self.progress = ProgressSlot(_context, jobs_settings.TRY_LOG_BYTES)
        self.progress_written = 0  # the slot's sequence last written to a row
        self.conn, theirs = _context.Pipe()
        self.process = _context.Process(
            target=child.main, args=(theirs, self.state, self.progress, worker, os.getpid()), daemon=True
        )
        self.process.start()
        theirs.close()
        self.batch: list[ClaimedJob] = []
        # Indexes in the batch whose outcome the child already reported: failed, rescheduled,
        # or an atomic job settled in its own transaction. They are not acknowledged with the batch.
        self.settled: set[int] = set()
        # Successes reported so far (a result or a log to store), by index in the batch.
        self.returned: dict[int, Outcome] = {}
        self.sent_at = 0.0
        self.batches_done = 0

    @property
    def busy(self) -> bool:
        return bool(self.batch)

    def start(self, batch: list[ClaimedJob]) -> None:
        self.state[CURRENT] = 0
        self.state[STARTED] = time.monotonic()
        messages.send(self.conn, RunBatch(batch))  # each job goes as a plain tuple (messages)
        self.batch, self.settled, self.returned, self.sent_at = batch, set(), {}, self.state[STARTED]

    def receive(self) -> FromChild:
        """The child's next message (EOFError or OSError once it is gone)."""
        return messages.receive_in_supervisor(self.conn)

    @property
    def started(self) -> float:
        """When the job running now (or the last one of the batch) started."""
        return self.state[STARTED]

    def current(self) -> tuple[int, ClaimedJob, float]:
        """The job running now: its index in the batch, the job, and its start."""
        index = min(int(self.state[CURRENT]), len(self.batch) - 1)
        return index, self.batch[index], self.state[STARTED]

    def finish(self) -> tuple[list[ClaimedJob], set[int], float]:
        """End the batch: its jobs, the indexes already settled (failed, rescheduled, or
        atomic), and how long it took (read ``returned`` first: it is emptied too)."""
        batch, settled, took = self.batch, self.settled, time.monotonic() - self.sent_at
        self.batch, self.settled, self.returned = [], set(), {}
        self.batches_done += 1
        return batch, settled, took

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()  # SIGKILL; a child that exits meanwhile is no error
        self.process.join(timeout=5)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            messages.send(self.conn, messages.STOP)
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
    # Moving average of one job's duration in this lane; sizes batches and prefetch.
    average_duration: float | None = None
    # Borrowing the fair share's reserved slots: jobs known to take at most this many
    # seconds may (JOBS_SHARE_BORROW_LIMIT; 0: never), known by their type's timeout
    # (``timeout_of``) or by the longest try of their type, and of their queue, seen here.
    borrow_limit: float = 0.0
    timeout_of: Callable[[str], float | None] = field(default=lambda type_name: None, repr=False)
    longest: dict[str, float] = field(default_factory=dict)
    longest_in_queue: dict[str, float] = field(default_factory=dict)
    # The queues that may have due jobs: all of them after a poll or a reconnect, those
    # named by a notification, none once a claim came back short. A queue at its fair
    # share stays here until a claim of it comes back short: its slot will free up.
    pending: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.maybe_work = True

    @property
    def maybe_work(self) -> bool:
        """May any queue of the lane have due jobs?"""
        return bool(self.pending)

    @maybe_work.setter
    def maybe_work(self, value: bool) -> None:
        self.pending = set(self.queues) if value else set()

    @property
    def label(self) -> str:
        return f"{','.join(self.queues)}:{self.slots}"

    @property
    def share(self) -> int | None:
        """The most children one queue may hold (None: no limit). Only a lane of several
        queues has one, and only from two slots on: one slot cannot be shared.

        Only short jobs may go beyond it (``may_borrow``, ``known_short``): a running job
        cannot be taken back, so a queue that filled every slot with hour-long jobs would
        keep the others waiting an hour. A backlog of long jobs of one queue alone therefore
        runs on ``slots - 1`` children; name lanes with ``--queue`` (or raise
        ``--concurrency``) where that matters."""
        if len(self.queues) > 1 and self.slots > 1:
            return self.slots - 1
        return None

    @property
    def idle(self) -> list[Child]:
        return [child for child in self.children if not child.busy]

    # --- the fair share ---------------------------------------------------------------------

    def running(self) -> dict[str, int]:
        """Busy children per queue (a batch holds jobs of one queue)."""
        return _count(child.batch[0].queue for child in self.children if child.busy)

    def known_short(self, type_name: str) -> bool:
        """Is a job of this type known to end within the borrow limit: its timeout says
        so, or it has run here and no try of it took longer?"""
        timeout = self.timeout_of(type_name)
        if timeout is not None and timeout <= self.borrow_limit:
            return True
        return self.longest.get(type_name, float("inf")) <= self.borrow_limit

    def may_borrow(self, queue: str, buffered: set[str] | None = None) -> bool:
        """May ``queue`` take the share's reserved slots now? Only while no other queue of
        the lane may have due jobs (none is pending, none waits in the buffer) and every
        try of the queue seen here was short: the slot it borrows is free again within one
        short job once another queue has work. A claim of such a queue may still bring a
        job of a type not known to be short: it waits for the queue's own slot
        (``next_batch``). ``buffered``: the queues of the buffered jobs, when the caller
        has them already."""
        if self.borrow_limit <= 0 or self.pending - {queue}:
            return False
        if buffered is None:
            buffered = {job.queue for job in self.buffer}
        if buffered - {queue}:
            return False
        return self.longest_in_queue.get(queue, float("inf")) <= self.borrow_limit

    def _limit(self, queue: str, share: int) -> int:
        """The most children ``queue`` may hold now."""
        return self.slots if self.may_borrow(queue) else share

    def claimable(self, want: int, size: int, max_prefetch: int) -> tuple[list[str], int]:
        """The queues one claim may take from now, and at most how many jobs: up to
        ``want``; with a share, only queues that may have due jobs and have room within
        their share (their children's batches of ``size`` jobs, plus, for very short jobs,
        the batches held ready for them, as ``claim_size``). ``([], 0)``: no claim now."""
        share = self.share
        if share is None:
            return (self.queues, want) if self.pending else ([], 0)
        running = self.running()
        buffered = _count(job.queue for job in self.buffer)
        room = {}
        for queue in self.queues:
            if queue not in self.pending:
                continue  # (a wake-up names one queue: the others cost it nothing)
            limit = self._limit(queue, share)
            ready = min(max_prefetch, limit * size) if size > 1 else 0
            room[queue] = (limit - running.get(queue, 0)) * size + ready - buffered.get(queue, 0)
        open_queues = [queue for queue, its_room in room.items() if its_room > 0]
        if not open_queues:
            return [], 0
        return open_queues, min(want, *(room[queue] for queue in open_queues))

    def claimed_short(self, queues: list[str]) -> None:
        """A claim of ``queues`` got fewer jobs than it asked for: none of them has more due."""
        self.pending.difference_update(queues)

    def next_batch(self, size: int) -> list[ClaimedJob]:
        """Up to ``size`` buffered jobs for an idle child, in claim order: with a share, of
        the first queue that is below it, and of that queue only; failing that, short jobs
        of a queue that may borrow a reserved slot. A job held to a concurrency limit
        (``ClaimedJob.held``) goes alone."""
        share = self.share
        if share is None:
            alone = 0  # the jobs before the first one held to a limit, or that one alone
            while alone < min(size, len(self.buffer)) and not self.buffer[alone].held:
                alone += 1
            return [self.buffer.popleft() for _ in range(min(max(1, alone), len(self.buffer)))]
        running = self.running()
        queue = next((job.queue for job in self.buffer if running.get(job.queue, 0) < share), None)
        if queue is not None:
            return self._take(size, lambda job: job.queue == queue)
        may_lend = self._lending(running)
        lender = next((job.queue for job in self.buffer if may_lend(job)), None)
        if lender is None:
            return []
        return self._take(size, lambda job: job.queue == lender and may_lend(job))

    def _lending(self, running: dict[str, int]) -> Callable[[ClaimedJob], bool]:
        """Whether a buffered job may run in a reserved slot now: its queue has a slot left
        and may borrow (``may_borrow``), and its type is known to be short. Each queue and
        each type is decided once for a pass over the buffer, not once for each job in it:
        ``may_borrow`` reads the whole buffer, and the buffer holds up to a claim's jobs."""
        buffered = {job.queue for job in self.buffer}
        lenders = {
            queue
            for queue in buffered
            if running.get(queue, 0) < self.slots and self.may_borrow(queue, buffered)
        }
        known_short = functools.cache(self.known_short)
        return lambda job: job.queue in lenders and known_short(job.type)

    def _take(self, size: int, fits: Callable[[ClaimedJob], bool]) -> list[ClaimedJob]:
        batch: list[ClaimedJob] = []
        kept: deque[ClaimedJob] = deque()
        for job in self.buffer:
            if len(batch) < size and fits(job) and not (batch and (job.held or batch[0].held)):
                batch.append(job)
            else:
                kept.append(job)
        self.buffer = kept
        return batch

    def ready(self) -> int:
        """How many buffered jobs an idle child may take now (all of them, without a share;
        with one, those of queues below it, or that may borrow a reserved slot)."""
        share = self.share
        if share is None or not self.buffer:
            return len(self.buffer)
        running = self.running()
        may_lend = self._lending(running)
        return sum(1 for job in self.buffer if running.get(job.queue, 0) < share or may_lend(job))

    # --- batches and prefetch -------------------------------------------------------------

    def batch_size(self, window: float) -> int:
        """Jobs per child message: as many as the child runs within ``window`` seconds at
        this lane's recent pace, at most MAX_BATCH; one until the pace is known."""
        if not self.average_duration or window <= 0:
            return 1
        return max(1, min(MAX_BATCH, int(window / self.average_duration)))

    def claim_size(self, window: float, max_prefetch: int) -> int:
        """How many jobs to ask for now: a batch for each idle child, plus (for very short
        jobs only) one batch per slot held ready so children never wait on a claim. A
        worker therefore never holds more than about two windows of work per slot, so it
        cannot hoard jobs that an idle worker elsewhere could run."""
        size = self.batch_size(window)
        want = len(self.idle) * size
        if size > 1:
            want += min(max_prefetch, self.slots * size)
        return max(0, want - len(self.buffer))

    def observe(self, took: float, batch: list[ClaimedJob], *, first: bool = False) -> None:
        """A batch ended after ``took`` seconds: the lane's pace, and each type's longest try.
        A child's ``first`` batch also paid for the child's own set-up (its first connection,
        its handlers' imports: tens of milliseconds): its tries are noted, but it does not
        set the pace, which would otherwise keep batches of one job for dozens of batches
        after every start while that figure decays."""
        each = took / max(1, len(batch))
        for job in batch:
            self.note(job, each)
        if first:
            return
        # A batch of n jobs is n tries at its pace: it moves the average as n tries in a
        # row would, so batches grow to their size within a few batches of short jobs.
        kept = 0.8 ** len(batch)
        previous = self.average_duration
        self.average_duration = each if previous is None else previous * kept + each * (1 - kept)

    def note(self, job: ClaimedJob, took: float) -> None:
        """How long one try took (however it ended): what tells a short type from a long one."""
        if took > self.longest.get(job.type, 0.0):
            self.longest[job.type] = took
        if took > self.longest_in_queue.get(job.queue, 0.0):
            self.longest_in_queue[job.queue] = took


def _count(queues: Iterable[str]) -> dict[str, int]:
    """How many of each queue: a plain dict, not a ``Counter``, whose construction cost a
    wake-up's claim some 25 µs (cold, after the worker idled)."""
    counts: dict[str, int] = {}
    for queue in queues:
        counts[queue] = counts.get(queue, 0) + 1
    return counts
