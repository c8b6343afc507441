"""Where a worker's plain claims stopped (MariaDB reads on from there): kept per set of
queues for READ_ON_FOR seconds after the last read from the head, dropped by a short
claim, and bounded in number."""

from __future__ import annotations

from datetime import datetime

from jobs.drivers.read_positions import POSITIONS_KEPT, READ_ON_FOR, Position, ReadPositions


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


AT = Position(0, datetime(2026, 12, 6), 7)


def test_a_position_lasts_read_on_for_after_the_read_from_the_head():
    clock = Clock()
    positions = ReadPositions(clock)
    assert positions.position(["default"]) is None
    positions.claimed(["default"], AT, from_head=True)
    clock.now = READ_ON_FOR / 2
    positions.claimed(["default"], AT._replace(id=9), from_head=False)  # read on: its age stays
    assert positions.position(["default"]) == AT._replace(id=9)
    clock.now = READ_ON_FOR
    assert positions.position(["default"]) is None


def test_a_short_claim_drops_the_position():
    positions = ReadPositions(Clock())
    positions.claimed(["default"], AT, from_head=True)
    positions.claimed(["default"], None, from_head=True)
    assert positions.position(["default"]) is None


def test_the_parameters_compare_priority_then_due_time_then_id():
    assert AT.params() == [0, 0, AT.run_at, AT.run_at, 7]


def test_no_more_than_positions_kept_are_kept():
    clock = Clock()
    positions = ReadPositions(clock)
    for number in range(POSITIONS_KEPT + 10):
        positions.claimed([f"q{number}"], AT, from_head=True)
    assert positions.position(["q0"]) is None  # the oldest went first
    assert positions.position([f"q{POSITIONS_KEPT + 9}"]) == AT
    assert (
        sum(positions.position([f"q{n}"]) is not None for n in range(POSITIONS_KEPT + 10)) == POSITIONS_KEPT
    )
