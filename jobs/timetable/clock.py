"""The one place the schedules read the time.

``JOBS_SCHEDULE_CLOCK_OFFSET`` (seconds, default 0) moves this clock, and only this one:
a test can put a real worker a few seconds before a daylight-saving change without waiting
for one. Jobs, heartbeats and the database keep the real time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from jobs.conf import jobs_settings


def now() -> datetime:
    return timezone.now() + timedelta(seconds=float(jobs_settings.SCHEDULE_CLOCK_OFFSET))
