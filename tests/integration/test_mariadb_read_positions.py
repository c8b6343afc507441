"""MariaDB: a worker's plain claim reads on from where its last full claim stopped, for
READ_ON_FOR seconds, instead of stepping again over the entries purge has not yet removed at
the head of the claim index; a read from there that comes back short takes the jobs ahead
of the position too, so a short claim still means nothing more is due."""

from __future__ import annotations

import pytest

from jobs import store
from jobs.drivers.mariadb import MariaDBDriver
from jobs.drivers.read_positions import READ_ON_FOR, ReadPositions
from tests.support.database import on_mariadb

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not on_mariadb(), reason="MariaDB's claim reads on from its last position"),
]


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


def _claim(drv: MariaDBDriver, limit: int, queues: tuple[str, ...] = ("default",)) -> list[int]:
    return [job.id for job in drv.claim("w1", list(queues), limit)]


@pytest.mark.parametrize("queues", [("default",), ("default", "ai")], ids=["one queue", "several"])
def test_a_full_claim__the_next_reads_on_and_a_short_one_takes_the_jobs_ahead_too(queues):
    drv, _ = _driver()
    backlog = [store.enqueue("test.noop", {}).pk for _ in range(10)]
    assert _claim(drv, 4, queues) == backlog[:4]
    urgent = store.enqueue("test.noop", {}, priority="critical").pk  # ahead of the position

    assert _claim(drv, 4, queues) == backlog[4:8]  # read on from the position: not seen yet
    # Short from the position: the jobs ahead of it too, first, in the same claim.
    assert _claim(drv, 4, queues) == [urgent, *backlog[8:]]
    assert _claim(drv, 4, queues) == []


def test_the_position_is_kept_from_the_last_read_from_the_head__then_the_head_again():
    drv, clock = _driver()
    backlog = [store.enqueue("test.noop", {}).pk for _ in range(12)]
    assert _claim(drv, 2) == backlog[:2]  # from the head
    urgent = store.enqueue("test.noop", {}, priority="critical").pk
    clock.now += READ_ON_FOR / 2
    assert _claim(drv, 2) == backlog[2:4]  # on from the position
    clock.now += READ_ON_FOR / 2  # READ_ON_FOR after the read from the head, not after the last claim
    assert _claim(drv, 2) == [urgent, backlog[4]]


def test_a_short_claim_drops_the_position__the_next_reads_from_the_head():
    drv, _ = _driver()
    first = [store.enqueue("test.noop", {}).pk for _ in range(2)]
    assert _claim(drv, 2) == first
    assert _claim(drv, 2) == []  # short: nothing left to read on to
    urgent = store.enqueue("test.noop", {}, priority="critical").pk
    later = store.enqueue("test.noop", {}).pk
    assert _claim(drv, 2) == [urgent, later]


def test_each_set_of_queues_has_its_own_position():
    drv, _ = _driver()
    default = [store.enqueue("test.noop", {}).pk for _ in range(4)]
    assert _claim(drv, 2) == default[:2]
    urgent = store.enqueue("test.noop", {}, priority="critical").pk
    # A lane's claim of two queues has read nothing yet: from the head, the urgent job first.
    assert _claim(drv, 2, ("default", "ai")) == [urgent, default[2]]
