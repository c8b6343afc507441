"""A bursty load for the fleet simulation: idle, then a burst of jobs of mixed lengths
enqueued over a few seconds, then a trickle at a steady rate that goes on for a while
after the burst has drained (however long that took on the machine at hand), then idle.

Every job is ``test.record`` (it sleeps for its length, then writes a row naming its job
and attempt), so the rows tell how often each job ran to its end. Needs Django set up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import jobs
from jobs.models import Job

# (seconds, share): mostly short jobs, some long ones that a task is still running when
# scale-in stops it.
MIX = ((0.0, 0.60), (0.02, 0.25), (0.2, 0.145), (3.0, 0.005))


@dataclass
class BurstyLoad:
    idle: float  # seconds before the burst
    burst: int  # jobs in the burst
    burst_spread: float  # seconds over which the burst is enqueued
    trickle_rate: float  # jobs/s after the burst
    trickle: float  # seconds the trickle goes on once the burst has drained
    tail: float  # idle seconds after the trickle
    seed: int = 11
    sent: int = 0
    burst_ids: tuple[int, int] | None = None  # first and last id of the burst's jobs
    drained_at: float | None = None  # when the burst's last job finished (``drained``)
    _random: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    @property
    def burst_end(self) -> float:
        return self.idle + self.burst_spread

    @property
    def trickle_end(self) -> float:
        return float("inf") if self.drained_at is None else self.drained_at + self.trickle

    @property
    def end(self) -> float:
        return self.trickle_end + self.tail

    def drained(self, now: float) -> None:
        """Note when the burst has drained (the caller checks), once."""
        if self.drained_at is None:
            self.drained_at = now

    def target(self, now: float) -> int:
        """Jobs that should have been enqueued by ``now``."""
        if now < self.idle:
            return 0
        if now < self.burst_end:
            return min(self.burst, round(self.burst * (now - self.idle) / self.burst_spread))
        return self.burst + round(self.trickle_rate * (min(now, self.trickle_end) - self.burst_end))

    def step(self, now: float) -> int:
        """Enqueue what is due by ``now``; returns how many were added."""
        target = self.target(now)
        added = 0
        burst_part = min(target, self.burst) - self.sent
        if burst_part > 0:
            first = _next_id()
            added += self._enqueue(burst_part)
            self.burst_ids = (self.burst_ids[0] if self.burst_ids else first, _next_id() - 1)
        added += self._enqueue(target - self.sent)
        return added

    def _enqueue(self, count: int) -> int:
        if count <= 0:
            return 0
        lengths, shares = zip(*MIX, strict=True)
        payloads = [{"sleep": length} for length in self._random.choices(lengths, shares, k=count)]
        self.sent += count
        return jobs.enqueue_many("test.record", payloads)


def _next_id() -> int:
    last = Job.objects.order_by("-id").values_list("id", flat=True).first()
    return (last or 0) + 1
