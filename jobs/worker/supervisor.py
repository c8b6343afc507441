"""The supervisor: claims jobs for its lanes, hands them to child processes, heartbeats,
reaps, wakes on NOTIFY, and stops gracefully.

It only calls ``jobs.store``, in one thread, between waits, and always through its
``DatabaseGuard`` (``jobs.worker.guard``): a database outage pauses claiming while the
``ResultBuffer`` (``jobs.worker.results``) keeps the children's results until the database
is back. How each try ends (its outcome, its log line, a dead child's batch) is
``Endings``'s (``jobs.worker.endings``). The handlers' progress reaches the rows through its ``ProgressWriter``
(``jobs.worker.progress``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import selectors
import signal
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jobs import registry, rollup, store, workers
from jobs.checks import UPKEEP_HINT
from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.errors import InvalidTransition, UnknownJobType
from jobs.store import ClaimedJob, Failure
from jobs.timetable.ticker import ScheduleTicker
from jobs.worker import forkserver
from jobs.worker.claiming import claim_into
from jobs.worker.endings import Endings
from jobs.worker.flow import FlowControl, read_notices
from jobs.worker.guard import OUTAGE_ERRORS, DatabaseGuard, commit_asynchronously, first_line
from jobs.worker.listener import Listener
from jobs.worker.pool import Child, Lane
from jobs.worker.progress import ProgressWriter
from jobs.worker.promoter import Promoter
from jobs.worker.results import ResultBuffer

logger = logging.getLogger("jobs.worker")


@dataclass
class WorkerOptions:
    lanes: list[tuple[list[str], int]]
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    burst: bool = False
    shutdown_timeout: float = 120.0
    poll_interval: float = 1.0
    schedules: bool = True  # book the timers' due slots (jobs.timetable)


class Supervisor:
    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.name = options.name
        self.lanes = [
            Lane(
                queues=list(queues),
                slots=slots,
                borrow_limit=jobs_settings.SHARE_BORROW_LIMIT,
                timeout_of=self._timeout,
            )
            for queues, slots in options.lanes
        ]
        self.listener = Listener()
        self.listener_fd: int | None = None  # as registered with the selector
        # What is ready on each registered file: the callback that handles it.
        self.selector: selectors.BaseSelector = selectors.DefaultSelector()
        self.db = DatabaseGuard(jobs_settings.WORKER_LEASE, on_outage=self._close_listener)
        self.results = ResultBuffer(self.name, self.db, ack_batch=jobs_settings.ACK_BATCH)
        self.progress = ProgressWriter(self.name, self.db, jobs_settings.PROGRESS_INTERVAL)
        self.endings = Endings(self.results, self.progress)
        self.schedules = ScheduleTicker(enabled=options.schedules, poll_interval=options.poll_interval)
        self.flow = FlowControl(options.poll_interval)
        self.freed_to_tell: set[str] = set()  # queues whose slots freed here: notices to send
        self.promoter = Promoter(options.poll_interval)
        self.stopping = False
        self.stop_deadline = 0.0
        self.next_heartbeat = 0.0
        self.next_poll = 0.0
        self.next_depth_sample = 0.0  # when this worker next tries to sample the queue depths
        self.burst_rechecked = False
        self.window = jobs_settings.PREFETCH_WINDOW
        self.max_prefetch = jobs_settings.MAX_PREFETCH
        self.types: dict[str, registry.JobType | None] = {}  # looked up once each; None: unknown
        # Types whose tries read their rows (``JobType.read_ahead``: django.tasks tasks),
        # learnt as their jobs are seen: later claims bring what those tries read.
        self.row_types: tuple[str, ...] = ()
        self.log_jobs = logger.isEnabledFor(logging.INFO)

    # --- lifecycle ------------------------------------------------------------------------

    def run(self) -> int:
        forkserver.start()  # first: before any connection, signal handler or session setting
        if jobs_settings.WORKER_ASYNC_COMMIT:
            commit_asynchronously()
        wakeup = self._install_signals()
        self.selector.register(wakeup, selectors.EVENT_READ, functools.partial(_drain_wakeup, wakeup))
        if not self._register(wakeup):
            return 0
        for lane in self.lanes:
            self._spawn(lane)
        self._connect_listener()
        logger.info(
            "Worker %s started: lanes %s%s; %s.",
            self.name,
            ", ".join(
                lane.label + (f" (at most {lane.share} per queue)" if lane.share else "")
                for lane in self.lanes
            ),
            ", burst" if self.options.burst else "",
            f"{self.listener.describe()}; {self.schedules.describe()}",
        )
        self._warn_upkeep_off()
        rollup.buffer()  # the finished tries add up here and are written once a second
        try:
            self._loop()
        finally:
            self._shutdown_children()
            self.results.flush(force=True)
            if rollup.pending():
                self.db.call(rollup.flush, force=True)
            self.db.call(workers.unregister, self.name)
            self.listener.close()
            signal.set_wakeup_fd(-1)
        logger.info("Worker %s stopped.", self.name)
        return 0

    def _warn_upkeep_off(self) -> None:
        """Say so when the database's own upkeep of the engine's tables is off (``platform.W005``,
        which only ``manage.py check --database default`` runs)."""
        gap = self.db.call(driver().upkeep_off)
        if gap:
            logger.warning("PostgreSQL: %s. %s", gap, UPKEEP_HINT)

    def _install_signals(self) -> int:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end)
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        return read_end

    def _on_stop_signal(self, signum: int, frame: object) -> None:
        if self.stopping:
            self.stop_deadline = 0.0  # a second signal: stop now
            return
        self.stopping = True
        self.stop_deadline = time.monotonic() + self.options.shutdown_timeout
        logger.info(
            "Worker %s got %s: finishing running jobs for up to %.0fs.",
            self.name,
            signal.Signals(signum).name,
            self.options.shutdown_timeout,
        )

    def _register(self, wakeup: int) -> bool:
        """Register this worker, retrying while the database cannot be reached; False when
        a stop signal came first."""
        register = functools.partial(
            workers.register,
            self.name,
            socket.gethostname(),
            os.getpid(),
            [lane.label for lane in self.lanes],
        )
        try:
            recovered = self.db.start_up(
                register,
                wait=lambda delay: select.select([wakeup], [], [], delay),  # a stop signal cuts it short
                stopping=lambda: self.stopping,
            )
        except InvalidTransition as exc:
            raise SystemExit(str(exc)) from None
        if recovered is None:
            return False
        if recovered.requeued or recovered.failed:
            logger.warning(
                "Recovered jobs left running under %s: %d requeued, %d failed.",
                self.name,
                recovered.requeued,
                recovered.failed,
            )
        return True

    # --- the loop -------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            self._stop_overdue(now)
            if self.stopping:
                self._keep_alive(now)
                self._release_buffers()
                if now >= self.stop_deadline:
                    self._cut_off_running()
                if not self._busy():
                    return
            else:
                self._periodic(now)
                self._fill_and_dispatch()
                self._tell_freed()
                self._after_claims(now)
                if self.options.burst and self._drained():
                    return
            if self._busy():
                self.progress.write_due(self._busy_children())
            if self.results.flush_due(now, self._busy):
                if self.results.requeues():
                    self.promoter.soon()  # learn when those retries come due
                self.results.flush()
            self._slots_ended()
            if rollup.pending():
                self.db.call(rollup.flush)  # at most once a second (jobs.rollup)
            for key, _ in self.selector.select(self._wait_timeout(time.monotonic())):
                handle: Callable[[], None] = key.data
                handle()

    def _busy(self) -> bool:
        return any(child.busy for lane in self.lanes for child in lane.children)

    def _busy_children(self) -> list[Child]:
        return [child for lane in self.lanes for child in lane.children if child.busy]

    def _drained(self) -> bool:
        if self._busy() or any(lane.buffer or lane.maybe_work for lane in self.lanes):
            return False
        if self.flow.retry_at() is not None:
            return False  # due jobs wait for a rate window: they are due, not drained
        if self.results:
            # Write them now rather than at the next turn: that turn would wait for the
            # next poll, as nothing else is left to wake it.
            if self.results.requeues():
                self.promoter.soon()  # learn when those retries come due
            self.results.flush()
            if self.results:
                return False  # the database is away: they wait for it
        if not self.burst_rechecked:
            # One more look: a job may have become due while the last ones ran (or a slot or
            # a rate window freed: what flow control remembers is forgotten for this look).
            self.burst_rechecked = True
            self.flow.polled()
            self.promoter.soon()
            for lane in self.lanes:
                lane.maybe_work = True
            return False
        return True

    def _wait_timeout(self, now: float) -> float:
        if not self.stopping and self.db.available(now):
            for lane in self.lanes:
                if lane.idle and (lane.ready() or self._may_claim(lane)):
                    return 0.0  # work to hand out right away
        deadlines = [self.next_heartbeat, self.stop_deadline if self.stopping else self.next_poll]
        if not self.stopping:  # (not before the database may be tried again)
            deadlines.append(max(self.promoter.deadline(), self.db.retry_at))
        if not self.stopping and (slot := self.schedules.deadline()) is not None:
            deadlines.append(slot)
        for lane in self.lanes:
            for child in lane.children:
                if child.busy:
                    _, job, started = child.current()
                    timeout = self._timeout(job.type)
                    if timeout:
                        deadlines.append(started + timeout)
                    deadlines.append(self.progress.deadline())
        ack_deadline = self.results.ack_deadline()
        if ack_deadline is not None:
            deadlines.append(ack_deadline)
        if not self.stopping and (window := self.flow.retry_at()) is not None:
            deadlines.append(window)  # a rate window that held jobs back has room again
        if self.db.retry_at > now:
            deadlines.append(self.db.retry_at)
        return max(0.0, min(deadlines) - now)

    def _timeout(self, type_name: str) -> float | None:
        job_type = self._job_type(type_name)
        return None if job_type is None else job_type.timeout

    def _job_type(self, type_name: str) -> registry.JobType | None:
        """The type, looked up once (None: unknown here); a type whose tries read their
        rows joins ``row_types`` as it is first seen."""
        if type_name not in self.types:
            try:
                job_type: registry.JobType | None = registry.lookup(type_name)
            except UnknownJobType:
                job_type = None
            self.types[type_name] = job_type
            if job_type is not None and job_type.read_ahead is not None:
                self.row_types = (*self.row_types, type_name)
        return self.types[type_name]

    # --- children -------------------------------------------------------------------------

    def _spawn(self, lane: Lane) -> None:
        while len(lane.children) < lane.slots:
            child = Child(lane, self.name)
            lane.children.append(child)
            self.selector.register(
                child.conn, selectors.EVENT_READ, functools.partial(self._on_message, child)
            )
            self.selector.register(
                child.process.sentinel, selectors.EVENT_READ, functools.partial(self._on_child_exit, child)
            )

    def _retire(self, child: Child) -> None:
        for target in (child.conn, child.process.sentinel):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(target)
        child.lane.children.remove(child)
        child.conn.close()

    def _replace(self, child: Child) -> None:
        self._retire(child)
        if not self.stopping:
            self._spawn(child.lane)

    # --- claiming and dispatch ------------------------------------------------------------

    def _periodic(self, now: float) -> None:
        if self.promoter.due(now) and self.db.available(now):
            promoted = self.promoter.promote(self.db, now)
            self.flow.jobs_due(promoted)  # keyed ones among them, perhaps
            for lane in self.lanes:
                lane.pending.update(promoted.intersection(lane.queues))
        if now >= self.next_poll:
            for lane in self.lanes:
                lane.maybe_work = True
            self.next_poll = now + self.options.poll_interval
            self.flow.polled()  # a slot freed by a worker that cannot notify shows now
            if self.db.available(now):
                self.db.call(self.flow.refresh)
        if (window := self.flow.retry_at()) is not None and now >= window:
            self.flow.expire_waits()
            for lane in self.lanes:
                lane.pending.update(queue for queue in lane.queues if self.flow.flowed(queue))
        if self._keep_alive(now) and self.db.may_reap(now):
            reaped = self.db.call(store.reap)
            if reaped and reaped.requeued:
                self.promoter.soon()  # they come back after their backoff
                for lane in self.lanes:
                    lane.maybe_work = True
        if not self.listener.connected and self.listener.enabled and self.db.available(now):
            self._connect_listener()

    def _after_claims(self, now: float) -> None:
        """What need not hold up a turn's claims (at start-up, the first jobs): the queue
        depths' sample, and the timers' due slots, whose first look also installs the
        declared timers."""
        if now >= self.next_depth_sample and self.db.available(now):
            # One worker of the fleet samples each minute's queue depths (jobs.rollup);
            # the others find the minute booked.
            self.db.call(rollup.sample_depth)
            self.next_depth_sample = now + 60.0 - time.time() % 60.0 + 1.0
        if self.schedules.due(now) and self.db.available(now):
            enqueued = self.db.call(self.schedules.tick)
            for lane in self.lanes if enqueued else ():
                lane.maybe_work = True  # timer runs were just enqueued

    def _keep_alive(self, now: float) -> bool:
        """Heartbeat this worker's running jobs when due; True when it did.

        Also while running jobs finish after SIGTERM: the grace period may outlast the
        lease, and another worker's reaper must not take back (and rerun) a job that is
        still running here."""
        if now < self.next_heartbeat or not self.db.available(now):
            return False
        self.next_heartbeat = now + jobs_settings.HEARTBEAT_INTERVAL
        self.db.call(store.heartbeat, self.name, self._held_ids())
        return True

    def _held_ids(self) -> list[int]:
        """Jobs this worker holds: waiting in a lane's buffer, running in a child, or
        finished with a result not yet written (say during an outage)."""
        held = [job.id for lane in self.lanes for job in lane.buffer]
        held += [job.id for lane in self.lanes for child in lane.children for job in child.batch]
        held += self.results.held_ids()
        return held

    def _fill_and_dispatch(self) -> None:
        for lane in self.lanes:
            idle = lane.idle
            if not idle:
                continue
            size = lane.batch_size(self.window)
            if (
                lane.ready() < len(idle) * size
                and self._may_claim(lane)
                and self.db.available(time.monotonic())
            ):
                self._claim(lane, size)
            for child in idle:
                batch = lane.next_batch(size)
                if not batch:
                    break
                self._start(child, batch)

    def _may_claim(self, lane: Lane) -> bool:
        """Is a claim worth making for this lane now?"""
        return bool(lane.claimable(1, lane.batch_size(self.window), self.max_prefetch)[0])

    def _claim(self, lane: Lane, size: int) -> None:
        claimed = claim_into(
            lane,
            size,
            worker=self.name,
            db=self.db,
            flow=self.flow,
            window=self.window,
            max_prefetch=self.max_prefetch,
            with_rows=self.row_types,
        )
        if claimed:
            self.burst_rechecked = False

    def _start(self, child: Child, batch: list[ClaimedJob]) -> None:
        if self.log_jobs:
            for job in batch:
                logger.info("start %s #%d attempt %d/%d", job.type, job.id, job.attempt, job.max_attempts)
        try:
            child.start(batch)
        except OSError:
            child.lane.buffer.extendleft(reversed(batch))  # never started: hand them to another child
            self._on_child_exit(child)

    def _slots_ended(self) -> None:
        """Jobs held to a concurrency limit ended and their outcome is written: their slots
        are free. Claim again here at once; the other workers are told after this worker's
        own claim (a notice where the database has them; elsewhere they find out at their
        next poll), so the notice costs the hand-over nothing."""
        ended = self.results.ended_queues()
        if ended:
            self._slots_freed_in(ended)
            self.freed_to_tell |= ended

    def _slots_freed_in(self, queues: Iterable[str]) -> None:
        """A slot of these queues' concurrency limits is free: their lanes claim again."""
        queues = set(queues)
        self.flow.slots_freed(queues)
        for lane in self.lanes:
            lane.pending.update(queues.intersection(lane.queues))

    def _tell_freed(self) -> None:
        if self.freed_to_tell and not self.stopping:
            self.db.call(store.notify_freed, sorted(self.freed_to_tell))
        self.freed_to_tell = set()

    def _on_notify(self) -> None:
        try:
            queues = self.listener.drain()
        except Exception as exc:  # noqa: BLE001 - a broken listener is reconnected later
            logger.warning("Lost the LISTEN connection (%s); polling until it is back.", first_line(exc))
            self._close_listener()
            return
        notices = read_notices(queues)
        self.flow.jobs_due(notices.due)
        self.flow.jobs_due(notices.plain, keyed=False)
        self.flow.jobs_due(notices.keyed, plain=False)
        if notices.freed:
            self.flow.slots_freed(notices.freed)
        woken = notices.due | notices.plain | notices.keyed | notices.freed
        for lane in self.lanes:
            lane.pending.update(woken.intersection(lane.queues))

    def _connect_listener(self) -> None:
        if not self.listener.enabled:
            return
        self._close_listener()
        try:
            self.listener.connect()
        except OUTAGE_ERRORS as exc:
            logger.warning("Cannot LISTEN (%s); polling until the database is back.", first_line(exc))
            self.listener.close()
            return
        self.listener_fd = self.listener.fileno()
        self.selector.register(self.listener_fd, selectors.EVENT_READ, self._on_notify)
        for lane in self.lanes:  # notifications may have been missed meanwhile
            lane.maybe_work = True

    def _close_listener(self) -> None:
        # Unregister the number it was registered under: a broken connection no longer
        # reports its socket, and the next connection may get the same number.
        if self.listener_fd is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(self.listener_fd)
            self.listener_fd = None
        self.listener.close()

    # --- results --------------------------------------------------------------------------

    def _on_message(self, child: Child) -> None:
        if not self.endings.collect(child):
            self._on_child_exit(child)

    def _on_child_exit(self, child: Child) -> None:
        if child not in child.lane.children:
            return  # already handled (its pipe and its sentinel both fire)
        self.endings.read_pending(child)
        how = child.exit_description()
        if child.busy:
            failure = Failure("WorkerCrashed", f"The child process running this job {how}.")
            self.endings.salvage(child, failure=failure, how="crashed")
        elif not self.stopping:  # a stopping worker replaces nothing
            logger.warning("An idle child process %s; replacing it.", how)
        self._replace(child)

    def _stop_overdue(self, now: float) -> None:
        for lane in self.lanes:
            for child in list(lane.children):
                if not child.busy:
                    continue
                _, job, started = child.current()
                timeout = self._timeout(job.type)
                if timeout and now >= started + timeout:
                    child.kill()
                    self.endings.read_pending(child)
                    if child.busy:  # else its batch ended just before it was stopped
                        failure = Failure(
                            "JobTimeout", f"The job ran longer than its {timeout:g}s timeout and was stopped."
                        )
                        self.endings.salvage(child, failure=failure, how="timed out")
                    self._replace(child)

    # --- stopping -------------------------------------------------------------------------

    def _release_buffers(self) -> None:
        for lane in self.lanes:
            while lane.buffer:
                self.results.release(lane.buffer.popleft())

    def _cut_off_running(self) -> None:
        for lane in self.lanes:
            for child in list(lane.children):
                if child.busy:
                    child.kill()
                    self.endings.read_pending(child)
                    if child.busy:
                        self.endings.salvage(child, release_message=store.REQUEUED_AT_SHUTDOWN)
                    self._retire(child)

    def _shutdown_children(self) -> None:
        self._release_buffers()
        self._cut_off_running()
        for lane in self.lanes:
            for child in list(lane.children):
                child.stop()
                self._retire(child)


def _drain_wakeup(wakeup: int) -> None:
    """Empty the pipe a signal wrote to: the signal itself was handled by its handler."""
    with contextlib.suppress(BlockingIOError):
        os.read(wakeup, 512)
