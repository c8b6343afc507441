"""Where a worker's plain claims stopped (MariaDB reads on from there): kept per set of
queues from a full claim of at least SMALLEST_CLAIM jobs, for READ_ON_FOR seconds after the
last read from the head; dropped by any other claim; bounded in number."""

from __future__ import annotations

from datetime import datetime

from jobs.drivers.read_positions import (
    POSITIONS_KEPT,
    READ_ON_FOR,
    SMALLEST_CLAIM,
    Position,
    ReadPositions,
)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


AT = Position(0, datetime(2026, 12, 6), 7)
FULL = [AT._replace(id=number) for number in range(SMALLEST_CLAIM)]  # a full claim, ending at id 15
END = FULL[-1]


def test_a_position_lasts_read_on_for_after_the_read_from_the_head():
    clock = Clock()
    positions = ReadPositions(clock)
    assert positions.position(["default"]) is None
    positions.claimed(["default"], SMALLEST_CLAIM, FULL, from_head=True)
    assert positions.position(["default"]) == END
    clock.now = READ_ON_FOR / 2
    on = [AT._replace(id=100 + number) for number in range(SMALLEST_CLAIM)]
    positions.claimed(["default"], SMALLEST_CLAIM, on, from_head=False)  # read on: its age stays
    assert positions.position(["default"]) == on[-1]
    clock.now = READ_ON_FOR
    assert positions.position(["default"]) is None


def test_the_position_is_the_last_in_claim_order():
    positions = ReadPositions(Clock())
    taken = [*FULL[1:], Position(-100, datetime(2026, 12, 7), 1)]  # a critical job, later and lower id
    positions.claimed(["default"], SMALLEST_CLAIM, taken, from_head=True)
    assert positions.position(["default"]) == END  # priority first, then due time, then id


def test_a_short_claim_or_a_small_one_drops_the_position():
    positions = ReadPositions(Clock())
    positions.claimed(["default"], SMALLEST_CLAIM, FULL, from_head=True)
    positions.claimed(["default"], SMALLEST_CLAIM + 1, FULL, from_head=True)  # short
    assert positions.position(["default"]) is None
    positions.claimed(["default"], SMALLEST_CLAIM - 1, FULL[1:], from_head=True)  # full, but small
    assert positions.position(["default"]) is None


def test_the_parameters_compare_priority_then_due_time_then_id():
    assert AT.params() == [0, 0, AT.run_at, AT.run_at, 7]


def test_no_more_than_positions_kept_are_kept():
    positions = ReadPositions(Clock())
    for number in range(POSITIONS_KEPT + 10):
        positions.claimed([f"q{number}"], SMALLEST_CLAIM, FULL, from_head=True)
    assert positions.position(["q0"]) is None  # the oldest went first
    assert positions.position([f"q{POSITIONS_KEPT + 9}"]) == END
    kept = sum(positions.position([f"q{n}"]) is not None for n in range(POSITIONS_KEPT + 10))
    assert kept == POSITIONS_KEPT
