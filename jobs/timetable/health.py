"""Timers whose runs stopped succeeding: what the "Background jobs" page, ``manage.py check
--database default`` (``platform.W002``) and the metrics (CloudWatch ``OverdueTimers``,
Prometheus ``jobs_timer_overdue``) all report, decided here once.

A timer is **overdue** when its last successful slot is older than the two slots now due
(for an interval timer: more than two intervals old): two slots in a row came and went
without a run that succeeded. Nothing was scheduling it (every worker runs with
``--no-schedules`` and cron is not calling the command), its runs fail, or a run hangs and
the overlap policy skips every slot after it. A timer never run counts from its
installation; a paused timer is not overdue.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobs.durations import format_duration
from jobs.models import Timer
from jobs.timetable import booking, clock

HINT = (
    "Check that a worker books the timers' slots (runworker without --no-schedules) or that cron, "
    "EventBridge or django-q2 runs its command, and see its last runs on Admin → Platform → Timers."
)


@dataclass(frozen=True)
class TimerState:
    name: str
    schedule: str
    overdue: bool
    last_success_slot: datetime | None
    since: datetime  # the last success, or the installation
    now: datetime

    @property
    def age(self) -> float:
        """Seconds since its last successful slot (or since it was installed)."""
        return max(0.0, (self.now - self.since).total_seconds())

    @property
    def warning(self) -> str:
        what = (
            f"its last successful slot is {format_duration(self.now - self.since)} old"
            if self.last_success_slot
            else f"no run succeeded since it was installed {format_duration(self.now - self.since)} ago"
        )
        return f"Timer {self.name!r} ({self.schedule}) has missed its runs: {what}."

    @property
    def hint(self) -> str:
        return HINT


def timer_states(now: datetime | None = None) -> list[TimerState]:
    """Every enabled, declared timer, by name."""
    now = now or clock.now()
    return [state_of(timer, now) for timer in Timer.objects.filter(enabled=True, declared=True)]


def state_of(timer: Timer, now: datetime) -> TimerState:
    calendar = booking.calendar_of(timer)
    since = timer.last_success_slot or timer.installed_at
    recent = calendar.newest_between(since, now, 2)  # the two newest slots since then, at most
    return TimerState(
        name=timer.name,
        schedule=calendar.describe(),
        overdue=len(recent) == 2,
        last_success_slot=timer.last_success_slot,
        since=since,
        now=now,
    )


def overdue(states: list[TimerState]) -> list[TimerState]:
    return [state for state in states if state.overdue]


# --- metrics ---------------------------------------------------------------------------------

OVERDUE_TIMERS = "OverdueTimers"  # CloudWatch: overall, and per timer (dimension "Timer")


def metric_data(states: list[TimerState], at: datetime) -> list[dict[str, Any]]:
    """The PutMetricData entries: how many timers are overdue, and 0 or 1 per timer."""
    data = [
        {"MetricName": OVERDUE_TIMERS, "Timestamp": at, "Value": float(len(overdue(states))), "Unit": "Count"}
    ]
    for state in states:
        data.append(
            {
                "MetricName": OVERDUE_TIMERS,
                "Timestamp": at,
                "Value": float(state.overdue),
                "Unit": "Count",
                "Dimensions": [{"Name": "Timer", "Value": state.name}],
            }
        )
    return data
