"""What is due at a moment and what the catch-up policy makes of it
(``jobs.timetable.planner``): pure, so every policy and edge is checked at exact moments."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.timetable import planner
from jobs.timetable.calendar import Calendar
from jobs.timetable.planner import CATCH_UP, SCHEDULED, Missed, Run

MINUTE = Calendar(every=60)
INSTALLED = datetime(2026, 12, 1, 11, 0, 30, tzinfo=UTC)


def at(minute: int, second: int = 0) -> datetime:
    return datetime(2026, 12, 1, 12, minute, second, tzinfo=UTC)


def plan(
    catch_up: str, *, last: datetime | None, now: datetime, grace: float = 60, window: float = 86400, **kw
):
    return planner.plan(
        kw.get("calendar", MINUTE),
        catch_up=catch_up,
        installed_at=kw.get("installed", INSTALLED),
        last_slot=last,
        now=now,
        grace=grace,
        window=window,
    )


@pytest.mark.parametrize("catch_up", ["skip", "once", "all"])
def test_plan__in_normal_operation_each_slot_is_one_scheduled_run(catch_up):
    assert plan(catch_up, last=at(0), now=at(1, 0)).runs == (Run(at(1), SCHEDULED),)
    assert plan(catch_up, last=at(1), now=at(1, 40)).empty  # booked already
    assert plan(catch_up, last=at(0), now=at(1, 40)).last_slot == at(1)


def test_plan__after_downtime_skip_runs_none_of_the_missed_slots():
    result = plan("skip", last=at(0), now=at(5, 30))  # 12:01–12:04 missed, 12:05 on time

    assert result.runs == (Run(at(5), SCHEDULED),)
    assert result.missed == Missed(at(4), 4)


def test_plan__after_downtime_once_runs_one_catch_up_keyed_by_the_newest_missed_slot():
    result = plan("once", last=at(0), now=at(5, 30))

    assert result.runs == (Run(at(4), CATCH_UP, covers=4), Run(at(5), SCHEDULED))
    assert result.missed is None


def test_plan__after_downtime_all_runs_every_missed_slot_oldest_first():
    result = plan("all", last=at(0), now=at(5, 30))

    assert result.runs == (*(Run(at(m), CATCH_UP) for m in (1, 2, 3, 4)), Run(at(5), SCHEDULED))


def test_plan__all_runs_only_the_missed_slots_within_the_window_and_counts_the_rest():
    result = plan("all", last=at(0), now=at(5, 30), window=150)  # back to 12:03:00

    assert result.runs == (Run(at(3), CATCH_UP), Run(at(4), CATCH_UP), Run(at(5), SCHEDULED))
    assert result.missed == Missed(at(2), 2)


def test_plan__a_due_slot_older_than_the_grace_is_missed_too():
    result = plan("skip", last=at(0), now=at(5, 45), grace=30)

    assert result.runs == ()
    assert result.missed == Missed(at(5), 5)
    assert result.last_slot == at(5)
    once = plan("once", last=at(0), now=at(5, 45), grace=30)
    assert once.runs == (Run(at(5), CATCH_UP, covers=5),)


def test_plan__an_interval_timers_first_slot_is_the_one_it_was_installed_in_and_runs_at_once():
    hourly = Calendar(every=3600)
    installed = datetime(2026, 12, 1, 14, 23, tzinfo=UTC)

    first = plan(
        "skip", last=None, now=installed + timedelta(seconds=5), calendar=hourly, installed=installed
    )

    assert first.runs == (Run(datetime(2026, 12, 1, 14, 0, tzinfo=UTC), SCHEDULED),)
    # Workers that come only two hours later: the installation slot is missed like any other.
    late = plan("skip", last=None, now=installed + timedelta(hours=2), calendar=hourly, installed=installed)
    assert late.runs == ()
    assert late.missed == Missed(datetime(2026, 12, 1, 16, 0, tzinfo=UTC), 3)


def test_plan__a_cron_timers_first_slot_is_its_first_time_after_installation():
    weekdays = Calendar(cron="0 7 * * 1-5", timezone="Europe/Berlin")
    installed = datetime(2026, 12, 1, 14, 23, tzinfo=UTC)  # a Tuesday, after 07:00 in Berlin

    assert plan(
        "once", last=None, now=installed + timedelta(hours=1), calendar=weekdays, installed=installed
    ).empty
    next_morning = datetime(2026, 12, 2, 6, 0, 10, tzinfo=UTC)  # 07:00:10 in Berlin
    assert plan("once", last=None, now=next_morning, calendar=weekdays, installed=installed).runs == (
        Run(datetime(2026, 12, 2, 6, 0, tzinfo=UTC), SCHEDULED),
    )


def test_plan__all_runs_at_most_the_catch_up_limit_and_counts_the_rest(monkeypatch):
    monkeypatch.setattr(planner, "CATCH_UP_LIMIT", 3)

    result = plan("all", last=at(0), now=at(10, 10))

    assert [run.slot for run in result.runs] == [at(7), at(8), at(9), at(10)]
    assert result.missed == Missed(at(6), 6)
