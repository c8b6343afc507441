"""When a timer's slots fall (``jobs.timetable.calendar``): intervals aligned to the epoch,
cron in a time zone across daylight-saving changes, the slot a command stands for, and what
a declaration may say. Pure arithmetic: no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ImproperlyConfigured

from jobs.timetable import declarations
from jobs.timetable.calendar import Calendar
from jobs.timetable.declarations import slot_key

BERLIN = ZoneInfo("Europe/Berlin")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_interval__slots_are_multiples_of_the_interval_since_the_epoch():
    five_minutes = Calendar(every=300)
    assert five_minutes.after(utc(2026, 12, 1, 15, 3, 12), 3) == [
        utc(2026, 12, 1, 15, 5),
        utc(2026, 12, 1, 15, 10),
        utc(2026, 12, 1, 15, 15),
    ]
    assert Calendar(every=3600).after(utc(2026, 12, 1, 15, 0), 1) == [
        utc(2026, 12, 1, 16, 0)
    ]  # strictly after
    assert five_minutes.latest_at_or_before(utc(2026, 12, 1, 15, 5)) == utc(2026, 12, 1, 15, 5)
    assert five_minutes.latest_at_or_before(utc(2026, 12, 1, 15, 4, 59, 999999)) == utc(2026, 12, 1, 15, 0)


def test_cron__a_time_skipped_by_the_clocks_going_forward_runs_once_right_after_the_jump():
    daily = Calendar(cron="30 2 * * *", timezone="Europe/Berlin")  # 02:30 does not exist on 28 March 2027

    slots = daily.after(datetime(2027, 3, 27, 12, 0, tzinfo=BERLIN), 3)

    assert [f"{slot.astimezone(BERLIN):%Y-%m-%d %H:%M %Z}" for slot in slots] == [
        "2027-03-28 03:00 CEST",
        "2027-03-29 02:30 CEST",
        "2027-03-30 02:30 CEST",
    ]


def test_cron__a_time_that_comes_twice_when_the_clocks_go_back_runs_the_first_time_only():
    daily = Calendar(cron="30 2 * * *", timezone="Europe/Berlin")  # 02:30 comes twice on 31 October 2027

    slots = daily.after(datetime(2027, 10, 30, 12, 0, tzinfo=BERLIN), 2)

    assert [slot.astimezone(UTC) for slot in slots] == [utc(2027, 10, 31, 0, 30), utc(2027, 11, 1, 1, 30)]
    # Backwards too: from within the repeated hour, the slot now due is the first 02:30.
    assert daily.latest_at_or_before(utc(2027, 10, 31, 1, 45)) == utc(2027, 10, 31, 0, 30)


def test_cron__more_often_than_hourly_keeps_its_pace_in_real_time_across_the_change():
    every_half_hour = Calendar(cron="*/30 * * * *", timezone="Europe/Berlin")

    slots = [slot.astimezone(UTC) for slot in every_half_hour.after(utc(2027, 10, 30, 23, 50), 6)]

    assert slots == [utc(2027, 10, 31, 0, 0) + timedelta(minutes=30 * n) for n in range(6)]
    assert len(set(slots)) == 6


@pytest.mark.parametrize(
    "expression", ["30 2 * * *", "0 2 * * *", "15,45 2 * * *", "*/20 * * * *", "0 */2 * * *"]
)
@pytest.mark.parametrize("night", [datetime(2027, 3, 28, tzinfo=UTC), datetime(2027, 10, 31, tzinfo=UTC)])
def test_cron__asked_from_any_moment_of_a_changing_night_names_the_same_slots(expression, night):
    """The booking asks "what is due now?" at any moment, in any process: the answers must
    be those of one run of cron through the night, never a slot more or a slot less."""
    calendar = Calendar(cron=expression, timezone="Europe/Berlin")
    start = night - timedelta(hours=6)
    reference = calendar.after(start, 200)  # one run through the night, from well before it

    for minute in range(0, 12 * 60, 7):  # every 7 minutes, across the change
        moment = start + timedelta(minutes=minute, seconds=13)
        assert calendar.next_after(moment) == min(slot for slot in reference if slot > moment), moment
        before = [slot for slot in reference if slot <= moment]
        assert calendar.latest_at_or_before(moment) == (
            max(before) if before else calendar.latest_at_or_before(start)
        ), moment
    end = night + timedelta(hours=6)
    assert calendar.newest_between(start, end, 500) == [slot for slot in reference if slot <= end][::-1]


def test_cron__with_seconds_first_and_in_utc_by_default():
    assert Calendar(cron="*/2 * * * * *").after(utc(2026, 1, 1, 0, 0, 1), 2) == [
        utc(2026, 1, 1, 0, 0, 2),
        utc(2026, 1, 1, 0, 0, 4),
    ]


def test_newest_between_and_count_between__newest_first_within_bounds():
    minute = Calendar(every=60)
    assert minute.newest_between(utc(2026, 1, 1, 12, 0), utc(2026, 1, 1, 12, 5, 30), 3) == [
        utc(2026, 1, 1, 12, 5),
        utc(2026, 1, 1, 12, 4),
        utc(2026, 1, 1, 12, 3),
    ]
    assert minute.count_between(utc(2026, 1, 1, 12, 0), utc(2026, 1, 1, 12, 5, 30), 100) == 5
    assert minute.count_between(utc(2026, 1, 1, 12, 0), utc(2026, 1, 2, 12, 0), 100) == 100  # capped
    ticks = Calendar(cron="* * * * *")
    assert ticks.count_between(utc(2026, 1, 1, 12, 0), utc(2026, 1, 1, 12, 5, 30), 100) == 5


def test_nearest__a_command_a_little_early_counts_for_the_coming_slot_and_a_late_one_for_the_due_one():
    five_minutes = Calendar(every=300)
    assert five_minutes.nearest(utc(2026, 12, 1, 15, 4, 59, 700000), early=60) == utc(2026, 12, 1, 15, 5)
    assert five_minutes.nearest(utc(2026, 12, 1, 15, 5, 0, 400000), early=60) == utc(2026, 12, 1, 15, 5)
    assert five_minutes.nearest(utc(2026, 12, 1, 15, 8, 30), early=60) == utc(2026, 12, 1, 15, 5)
    assert five_minutes.nearest(utc(2026, 12, 1, 15, 3, 0), early=60) == utc(2026, 12, 1, 15, 0)
    # Never more than half a period early: a one-second timer rounds to the nearest second.
    assert Calendar(every=1).nearest(utc(2026, 1, 1, 0, 0, 0, 600000), early=60) == utc(2026, 1, 1, 0, 0, 1)
    assert Calendar(every=1).nearest(utc(2026, 1, 1, 0, 0, 0, 400000), early=60) == utc(2026, 1, 1, 0, 0, 0)


def test_describe__says_the_schedule_in_words():
    assert Calendar(every=300).describe() == "every 5 minutes"
    assert Calendar(every=3600).describe() == "every hour"
    assert Calendar(every=90).describe() == "every 90 seconds"
    assert (
        Calendar(cron="0 7 * * 1-5", timezone="Europe/Berlin").describe()
        == "At 07:00 on Monday through Friday (Europe/Berlin)"
    )


@pytest.mark.parametrize(
    "given, says",
    [
        ({"every": 0}, "every= must be a whole number"),
        ({"every": 1.5}, "every= must be a whole number"),
        ({"every": 60, "cron": "* * * * *"}, "either every="),
        ({}, "either every="),
        ({"cron": "61 * * * *"}, "Bad minute"),
        ({"cron": "* " * 60}, "longer than 100"),
        ({"every": 60, "timezone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
    ],
)
def test_calendar__refuses_what_is_not_a_schedule(given, says):
    with pytest.raises(ValueError, match=says):
        Calendar(**given)


def test_declarations__steps_that_disagree_about_their_timer_fail_where_they_are_written():
    declarations.add("unit.report", 300, {"catch_up": "skip"})
    try:
        with pytest.raises(ImproperlyConfigured, match="catch_up='skip' and catch_up='all'"):
            declarations.add("unit.report", 300, {"catch_up": "all"})
        with pytest.raises(ImproperlyConfigured, match="overlap='sometimes'"):
            declarations.add("unit.report", 300, {"overlap": "sometimes"})
        with pytest.raises(ImproperlyConfigured, match="Timer 'unit.report': a timer takes either"):
            declarations.add("unit.report", None, {"cron": "* * * * *"})
        declarations.add("unit.report", 60, {})  # a second step that asks for more often
        assert declarations.spec("unit.report").calendar == Calendar(every=60)
        assert declarations.spec("unit.report").catch_up == "skip"  # the refused ones left no trace
    finally:
        declarations.forget("unit.report")
    with pytest.raises(ImproperlyConfigured, match="without spaces or '@'"):
        declarations.add("a timer@night", 60, {})


def test_slot_key__names_the_timer_and_the_slot_in_utc():
    assert (
        slot_key("sweep", datetime(2026, 12, 1, 16, 5, tzinfo=BERLIN)) == "timer:sweep@2026-12-01T15:05:00Z"
    )
    assert slot_key("sweep", utc(2026, 12, 1, 15, 5, 7, 120)) == "timer:sweep@2026-12-01T15:05:07.000120Z"
