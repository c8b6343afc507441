"""The supervisor's database guard: outage detection, reconnect backoff, the start-up
retry, and reaping only after a full lease with the database. No database: the calls it
guards are fakes that answer or raise."""

from __future__ import annotations

import logging

import pytest
from django.db import InterfaceError, OperationalError

from jobs.errors import InvalidTransition
from jobs.worker.guard import DatabaseGuard

LEASE = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Database:
    """A store call that fails while ``down`` and counts its calls."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    def call(self, value: str = "ok") -> str:
        self.calls += 1
        if self.down:
            raise OperationalError("connection refused\nDETAIL: the server is down")
        return value


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def closed() -> list[str]:
    return []


@pytest.fixture
def guard(clock, closed) -> DatabaseGuard:
    return DatabaseGuard(
        LEASE,
        on_outage=lambda: closed.append("listener"),
        close_connection=lambda: closed.append("connection"),
        clock=clock,
    )


def test_call__returns_what_the_call_returns_while_the_database_answers(guard):
    assert guard.call(Database().call, "claimed") == "claimed"


def test_call__an_outage_returns_none_and_closes_the_connection_and_the_listener(guard, closed, caplog):
    database = Database()
    database.down = True
    with caplog.at_level(logging.WARNING, logger="jobs.worker"):
        assert guard.call(database.call) is None
    assert closed == ["connection", "listener"]
    assert "Database unreachable (connection refused); retrying in 0.25s." in caplog.messages


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_call__both_kinds_of_connection_error_count_as_an_outage(guard, error):
    def broken() -> None:
        raise error("gone")

    assert guard.call(broken) is None
    assert not guard.available(guard.retry_at - 0.01)


def test_call__a_lock_conflict_is_no_outage_the_next_call_goes_ahead_on_the_same_connection(clock, closed):
    """A deadlock's victim: the database rolled the call back and is there (the driver
    tells, ``Driver.is_conflict``): no backoff, nothing closed, the lease goes on."""
    guard = DatabaseGuard(
        LEASE,
        on_outage=lambda: closed.append("listener"),
        close_connection=lambda: closed.append("connection"),
        is_conflict=lambda error: "Deadlock found" in str(error),
        clock=clock,
    )
    guard.start_up(Database().call, wait=lambda seconds: None, stopping=lambda: False)
    clock.now += LEASE

    def deadlocked() -> None:
        raise OperationalError(1213, "Deadlock found when trying to get lock; try restarting transaction")

    assert guard.call(deadlocked) is None
    assert closed == []
    assert guard.available(clock.now) and guard.may_reap(clock.now)
    assert guard.call(Database().call) == "ok"


def test_call__other_errors_propagate(guard, closed):
    def broken() -> None:
        raise InvalidTransition("not an outage")

    with pytest.raises(InvalidTransition):
        guard.call(broken)
    assert closed == []


def test_call__no_call_is_made_before_the_backoff_is_over(guard, clock):
    database = Database()
    database.down = True
    guard.call(database.call)
    database.down = False

    clock.now += 0.2
    assert guard.call(database.call) is None
    assert database.calls == 1
    assert not guard.available(clock.now)

    clock.now += 0.05
    assert guard.available(clock.now)
    assert guard.call(database.call) == "ok"
    assert database.calls == 2


def test_call__backoff_doubles_from_a_quarter_second_up_to_five_seconds(guard, clock):
    database = Database()
    database.down = True
    waits = []
    for _ in range(7):
        clock.now = guard.retry_at
        guard.call(database.call)
        waits.append(guard.retry_at - clock.now)
    assert waits == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_call__recovery_is_logged_once_and_resets_the_backoff(guard, clock, caplog):
    database = Database()
    database.down = True
    guard.call(database.call)
    clock.now = guard.retry_at
    guard.call(database.call)  # backoff now 0.5 s
    database.down = False
    clock.now = guard.retry_at
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jobs.worker"):
        assert guard.call(database.call) == "ok"
        assert guard.call(database.call) == "ok"
    assert caplog.messages == ["Database reachable again."]

    database.down = True
    guard.call(database.call)
    assert guard.retry_at - clock.now == 0.25  # starts over from the first step


def test_may_reap__not_before_a_full_lease_after_start_up(guard, clock):
    guard.start_up(Database().call, wait=lambda seconds: None, stopping=lambda: False)
    assert not guard.may_reap(clock.now + LEASE - 0.01)
    assert guard.may_reap(clock.now + LEASE)


def test_may_reap__not_before_a_full_lease_after_an_outage(guard, clock):
    database = Database()
    guard.start_up(database.call, wait=lambda seconds: None, stopping=lambda: False)
    clock.now += 2 * LEASE
    assert guard.may_reap(clock.now)

    database.down = True
    guard.call(database.call)
    database.down = False
    clock.now = guard.retry_at
    guard.call(database.call)  # the database is back: every other worker's heartbeat is old
    back = clock.now
    assert not guard.may_reap(back + LEASE - 0.01)
    assert guard.may_reap(back + LEASE)


def test_start_up__retries_with_doubling_waits_until_the_database_answers(guard, closed, caplog):
    database = Database()
    database.down = True
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            database.down = False

    with caplog.at_level(logging.WARNING, logger="jobs.worker"):
        assert guard.start_up(database.call, wait=wait, stopping=lambda: False) == "ok"
    assert waits == [0.5, 1.0, 2.0]
    assert closed == ["connection"] * 3  # the listener is not connected yet
    assert caplog.messages[0] == "Database unreachable at start-up (connection refused); retrying in 0.5s."


def test_start_up__waits_grow_to_thirty_seconds_at_most(guard):
    database = Database()
    database.down = True
    waits: list[float] = []
    guard.start_up(database.call, wait=waits.append, stopping=lambda: len(waits) == 9)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_start_up__a_stop_signal_ends_the_retries(guard):
    database = Database()
    database.down = True
    stop = []
    assert guard.start_up(database.call, wait=stop.append, stopping=lambda: bool(stop)) is None
    assert database.calls == 1


def test_start_up__errors_other_than_an_outage_propagate(guard):
    def taken() -> None:
        raise InvalidTransition("A live worker already runs under the name 'taken'.")

    with pytest.raises(InvalidTransition):
        guard.start_up(taken, wait=lambda seconds: None, stopping=lambda: False)
