"""MariaDB: a worker's plain claim reads on from where its last full claim (of at least
SMALLEST_CLAIM jobs) stopped, for READ_ON_FOR seconds, instead of stepping again over the
entries purge has not yet removed at the head of the claim index; a read from there that
comes back short takes the jobs ahead of the position too, so a short claim still means
nothing more is due."""

from __future__ import annotations

import pytest

from jobs import store
from jobs.drivers.mariadb import MariaDBDriver
from jobs.drivers.read_positions import READ_ON_FOR, SMALLEST_CLAIM, ReadPositions
from jobs.models import Job
from tests.support.database import on_mariadb

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not on_mariadb(), reason="MariaDB's claim reads on from its last position"),
]

S = SMALLEST_CLAIM


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _driver() -> tuple[MariaDBDriver, Clock]:
    clock = Clock()
    drv = MariaDBDriver()
    drv._positions = ReadPositions(clock)
    return drv, clock


def _backlog(count: int) -> list[int]:
    """``count`` queued jobs of normal priority in ``default``, their ids in claim order."""
    return [store.enqueue("test.noop", {}).pk for _ in range(count)]


def _urgent() -> int:
    """A critical job: ahead of every normal one in claim order."""
    return store.enqueue("test.noop", {}, priority="critical").pk


def _claim(drv: MariaDBDriver, limit: int, queues: tuple[str, ...] = ("default",)) -> list[int]:
    return [job.id for job in drv.claim("w1", list(queues), limit)]


@pytest.mark.parametrize("queues", [("default",), ("default", "ai")], ids=["one queue", "several"])
def test_a_full_claim__the_next_reads_on_and_a_short_one_takes_the_jobs_ahead_too(queues):
    drv, _ = _driver()
    backlog = _backlog(2 * S + 2)
    assert _claim(drv, S, queues) == backlog[:S]
    urgent = _urgent()  # ahead of the position

    assert _claim(drv, S, queues) == backlog[S : 2 * S]  # read on from the position: not seen yet
    # Short from the position: the jobs ahead of it too, first, in the same claim.
    assert _claim(drv, S, queues) == [urgent, *backlog[2 * S :]]
    assert _claim(drv, S, queues) == []
    assert Job.objects.filter(status="queued").count() == 0


def test_the_position_lasts_read_on_for_after_the_last_read_from_the_head():
    drv, clock = _driver()
    backlog = _backlog(3 * S)
    assert _claim(drv, S) == backlog[:S]  # from the head
    urgent = _urgent()
    clock.now += READ_ON_FOR / 2
    assert _claim(drv, S) == backlog[S : 2 * S]  # on from the position
    clock.now += READ_ON_FOR / 2  # READ_ON_FOR after the read from the head, not after the last claim
    assert _claim(drv, S) == [urgent, *backlog[2 * S : 3 * S - 1]]


def test_a_short_claim_drops_the_position__the_next_reads_from_the_head():
    drv, _ = _driver()
    first = _backlog(S)
    assert _claim(drv, S) == first
    assert _claim(drv, S) == []  # short: nothing left to read on to
    later = _backlog(S)
    urgent = _urgent()
    assert _claim(drv, S) == [urgent, *later[:-1]]


def test_a_claim_of_fewer_than_the_smallest_keeps_strict_claim_order():
    drv, _ = _driver()
    backlog = _backlog(2 * (S - 1))
    assert _claim(drv, S - 1) == backlog[: S - 1]
    urgent = _urgent()
    assert _claim(drv, S - 1) == [urgent, *backlog[S - 1 : 2 * (S - 1) - 1]]


def test_each_set_of_queues_has_its_own_position():
    drv, _ = _driver()
    backlog = _backlog(2 * S)
    assert _claim(drv, S) == backlog[:S]
    urgent = _urgent()
    # A lane's claim of two queues has read nothing yet: from the head, the urgent job first.
    assert _claim(drv, S, ("default", "ai")) == [urgent, *backlog[S : 2 * S - 1]]
