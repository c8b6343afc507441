"""A worker whose due jobs are all over their limits waits: no process, no database. The
store is a fake that says what held the jobs back; the supervisor's claim leaves the queue
out until a wake-up (the next poll, or the moment a rate window frees), instead of asking
again and again."""

from __future__ import annotations

import time

import pytest

from jobs import store
from jobs.flow.queues import Controls
from jobs.worker.pool import Child
from jobs.worker.supervisor import Supervisor, WorkerOptions


class Claims:
    """The store's two claims, faked: nothing is taken, for the reason given."""

    def __init__(self, held: store.FlowClaim) -> None:
        self.held = held
        self.calls: list[str] = []

    def flowed(self, worker, queues, limit, rules, **options) -> store.FlowClaim:
        self.calls.append("flowed")
        return self.held

    def plain(self, worker, queues, limit, **options) -> list:
        self.calls.append("plain")
        return []


class Listening:
    """The wake-up connection, connected (so the loop does not connect one)."""

    connected = True
    enabled = True


def _worker(monkeypatch: pytest.MonkeyPatch, held: store.FlowClaim) -> tuple[Supervisor, Claims]:
    claims = Claims(held)
    monkeypatch.setattr(store, "claim_flowed", claims.flowed)
    monkeypatch.setattr(store, "claim", claims.plain)
    supervisor = Supervisor(WorkerOptions(lanes=[(["default"], 2)], name="w", schedules=False))
    supervisor.listener = Listening()
    supervisor.flow.controls = Controls(1.0, read=dict)
    supervisor.flow.controls.refresh()
    supervisor.flow._limited_types = {"default"}  # it holds limited types beside others
    lane = supervisor.lanes[0]
    for _ in range(2):  # two idle children
        child = Child.__new__(Child)
        child.lane, child.batch = lane, []
        lane.children.append(child)
    now = time.monotonic()
    supervisor.next_poll, supervisor.next_heartbeat = now + 1.0, now + 100.0
    supervisor.promoter.next_at = supervisor.promoter.last_at = now + 100.0  # no job due later here
    return supervisor, claims


def test_every_due_job_over_a_concurrency_limit__the_worker_waits_for_a_wake_up(monkeypatch):
    full = store.FlowClaim(refused=3, full_keys={"type:test.flow_type"})
    supervisor, claims = _worker(monkeypatch, full)

    supervisor._fill_and_dispatch()
    assert claims.calls == ["flowed", "plain"]  # the keyed claim, then the jobs without keys
    assert supervisor._wait_timeout(time.monotonic()) > 0.5  # the next poll, a second away
    supervisor._fill_and_dispatch()
    assert claims.calls == ["flowed", "plain"]  # not asked again
    assert supervisor.flow.full_keys == {"type:test.flow_type"}

    supervisor._slots_freed_in(["default"])  # a slot of it freed here (or a notice said so)
    supervisor._fill_and_dispatch()
    assert claims.calls == ["flowed", "plain", "flowed"]  # the keyed claim only: its jobs may go
    assert supervisor.flow.full_keys == {"type:test.flow_type"}  # still full, as the store said


def test_every_due_job_over_a_rate__the_worker_wakes_when_the_window_frees(monkeypatch):
    waiting = store.FlowClaim(refused=5, rate_waits={"type:test.flow_rate": 0.2})
    supervisor, claims = _worker(monkeypatch, waiting)

    supervisor._fill_and_dispatch()
    assert 0.1 < supervisor._wait_timeout(time.monotonic()) <= 0.2  # the window, not the poll
    supervisor._fill_and_dispatch()
    assert claims.calls == ["flowed", "plain"]

    supervisor._periodic(time.monotonic() + 0.25)  # the window has room again
    supervisor._fill_and_dispatch()
    assert claims.calls == ["flowed", "plain", "flowed"]
