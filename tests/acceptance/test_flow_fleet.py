"""Flow control with real ``manage.py runworker`` fleets (several processes, several slots
each): the running jobs of a type and of a key, sampled throughout a drain, never exceed
their limit and reach it; a rate of 5/s over 40 jobs never starts more than 5 in any
second; a paused queue starts nothing until it is resumed; a worker killed mid-drain gives
its slots back through the reaper. On PostgreSQL and MariaDB (where workers poll)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest

import jobs
from jobs import store
from jobs.models import Job, Status
from tests.support.job_states import finished, wait_finished, wait_status
from tests.support.waiting import wait_for
from tests.support.workers import wait_log, wait_registered

pytestmark = pytest.mark.django_db(transaction=True)

# Short polls everywhere (MariaDB's workers poll; PostgreSQL's also wake on notices), a
# lease long enough that a loaded machine's slow worker is not taken for dead, except in
# the test that kills one.
FLEET = {"JOBS_POLL_INTERVAL": "0.1", "JOBS_WORKER_LEASE": "20", "JOBS_REAP_AFTER": "30"}


class Sampler:
    """The running jobs of one type, by limit key, read again and again until the jobs end."""

    def __init__(self, type_name: str, ids: list[int]) -> None:
        self.type_name, self.ids = type_name, ids
        self.samples: list[Counter[str | None]] = []

    def __call__(self) -> bool:
        running = Job.objects.filter(type=self.type_name, status=Status.RUNNING)
        self.samples.append(Counter(running.values_list("concurrency_key", flat=True)))
        return finished(self.ids)

    def drain(self, timeout: float = 120) -> None:
        wait_for(
            self, timeout=timeout, interval=0.01, message=f"{len(self.ids)} {self.type_name} jobs to finish"
        )

    def most(self, key: str | None = None) -> int:
        """The most jobs seen running at once (of ``key``; of any key without one)."""
        return max((sample[key] if key else sum(sample.values())) for sample in self.samples)


def _most_at_once(ids: list[int], key: Callable[[Job], object] = lambda job: None) -> Counter[object]:
    """From the rows' own times, the most jobs of each ``key`` that were running at one
    moment (a start at the moment another ends does not overlap it)."""
    events = []
    for job in Job.objects.filter(pk__in=ids):
        events += [(job.started_at, 1, key(job)), (job.finished_at, -1, key(job))]
    now: Counter[object] = Counter()
    most: Counter[object] = Counter()
    for _, change, group in sorted(events, key=lambda event: (event[0], event[1])):
        now[group] += change
        most[group] = max(most[group], now[group])
    return most


def _fleet(start_worker, count: int = 2, slots: int = 3, env: dict[str, str] | None = None) -> list:
    names = [f"flow-{n}" for n in range(count)]
    workers = [
        start_worker("--queue", f"default:{slots}", "--name", name, env={**FLEET, **(env or {})})
        for name in names
    ]
    wait_registered(*names)
    return workers


def test_concurrency_of_a_type__never_exceeded_and_reached_by_a_fleet_of_six_slots(start_worker):
    _fleet(start_worker)
    ids = [store.enqueue("test.flow_type", {"seconds": 0.2}).pk for _ in range(10)]
    sampler = Sampler("test.flow_type", ids)
    sampler.drain()

    assert sampler.most() == 2  # two at once, never three, with six slots idle
    assert _most_at_once(ids)[None] == 2
    jobs_done = Job.objects.filter(pk__in=ids)
    assert {(job.status, job.attempts) for job in jobs_done} == {
        (Status.SUCCEEDED, 1)
    }  # waiting used no attempt


def test_concurrency_per_key__one_per_account_and_two_accounts_at_once(start_worker):
    _fleet(start_worker)
    payloads = [{"account": account, "seconds": 0.2} for _ in range(4) for account in (1, 2)]
    ids = [store.enqueue("test.flow_key", payload).pk for payload in payloads]
    sampler = Sampler("test.flow_key", ids)
    sampler.drain()

    assert sampler.most("account:1") == 1 and sampler.most("account:2") == 1
    assert sampler.most() == 2  # the limit is per key: both accounts ran at once
    assert _most_at_once(ids, key=lambda job: job.concurrency_key) == {"account:1": 1, "account:2": 1}


def test_rate__five_a_second_over_forty_jobs_never_starts_six_in_any_second(start_worker):
    _fleet(start_worker, slots=2)
    ids = [store.enqueue("test.flow_rate", {}).pk for _ in range(40)]
    wait_finished(ids, timeout=60)

    starts = sorted(Job.objects.filter(pk__in=ids).values_list("started_at", flat=True))
    second = timedelta(seconds=1)
    most = max(sum(1 for other in starts if start <= other < start + second) for start in starts)
    assert most == 5  # in any window of a second, and the rate was used to the full
    assert not Job.objects.filter(pk__in=ids).exclude(status=Status.SUCCEEDED, attempts=1).exists()


def test_rate_under_leases__workers_start_leased_jobs_without_the_gate_and_never_101_in_a_second(
    start_worker,
):
    """Leases of up to four starts (``JOBS_FLOW_LEASE=4``) while a fourth of the window's
    room allows them: recorded in the window when handed out, at the lease's end. Which
    worker leases is a race (once the window has filled, its room comes back a few starts
    at a time, too little for a lease): the fleet leases, and every start counts."""
    fleet = _fleet(start_worker, env={"JOBS_FLOW_LEASE": "4", "LOG_LEVEL": "DEBUG"})
    ids = [store.enqueue("test.flow_leased", {}).pk for _ in range(300)]
    wait_finished(ids, timeout=60)
    assert any("Leased 4 jobs of test.flow_leased" in worker.log() for worker in fleet)

    starts = sorted(Job.objects.filter(pk__in=ids).values_list("started_at", flat=True))
    second = timedelta(seconds=1)
    most = max(sum(1 for other in starts if start <= other < start + second) for start in starts)
    assert most == 100  # in any window of a second, and the rate was used to the full
    assert not Job.objects.filter(pk__in=ids).exclude(status=Status.SUCCEEDED, attempts=1).exists()


def test_pause__a_paused_queue_starts_nothing_until_resumed_and_its_running_job_finishes(
    start_worker, tmp_path
):
    worker = start_worker("--name", "pauser", env=FLEET)  # every queue, two slots
    wait_registered("pauser")
    gate = tmp_path / "gate"
    running = store.enqueue("test.limited_queue", {"gate": str(gate)}).pk
    wait_status(running, Status.RUNNING)

    jobs.pause_queue("limited")
    wait_log(worker, "Queue limited is paused")
    held = [store.enqueue("test.limited_queue", {}).pk for _ in range(2)]
    gate.touch()
    wait_status(running, Status.SUCCEEDED)  # what ran when the queue was paused finishes
    # The worker claims after the held jobs were enqueued: a job of another queue runs.
    wait_status(store.enqueue("test.noop", {}).pk, Status.SUCCEEDED)
    assert set(Job.objects.filter(pk__in=held).values_list("status", "attempts")) == {(Status.QUEUED, 0)}

    jobs.resume_queue("limited")
    wait_finished(held)
    assert "Queue limited is resumed" in worker.log()


def test_kill_9__a_worker_killed_holding_slots_gives_them_back_through_the_reaper(start_worker, tmp_path):
    quick = {"JOBS_WORKER_LEASE": "3", "JOBS_REAP_AFTER": "5"}
    victim = start_worker("--queue", "default:3", "--name", "victim", env={**FLEET, **quick})
    wait_registered("victim")
    gate = tmp_path / "gate"
    held = [store.enqueue("test.flow_key", {"account": account, "gate": str(gate)}).pk for account in (1, 2)]
    wait_for(lambda: Job.objects.filter(pk__in=held, status=Status.RUNNING, locked_by="victim").count() == 2)
    rest = [store.enqueue("test.flow_key", {"account": account}).pk for account in (1, 2) for _ in range(2)]
    victim.kill_all()  # both accounts' slots are held by a dead worker

    _fleet(start_worker, env=quick)
    gate.touch()
    sampler = Sampler("test.flow_key", held + rest)
    sampler.drain(timeout=90)
    assert sampler.most("account:1") == 1 and sampler.most("account:2") == 1
    reaped = Job.objects.filter(pk__in=held)
    assert {(job.status, job.attempts) for job in reaped} == {(Status.SUCCEEDED, 2)}  # taken back, run again
    assert set(Job.objects.filter(pk__in=rest).values_list("status", flat=True)) == {Status.SUCCEEDED}
