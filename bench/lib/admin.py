"""Timing admin views through Django's test client, as the operator who uses them.
Needs Django set up first (``bench.lib.project.setup``)."""

from __future__ import annotations

import time

from django.contrib.auth.models import Permission, User
from django.test import Client


def operator() -> User:
    """Staff with platform.view_jobs and platform.change_job, not a superuser."""
    user, _ = User.objects.get_or_create(username="bench-operator", defaults={"is_staff": True})
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="platform", codename__in=["view_jobs", "change_job"]
        )
    )
    return user


def time_view(client: Client, url: str, runs: int, headers: dict[str, str] | None = None) -> list[float]:
    """Milliseconds per GET of ``url``, ``runs`` times after one warm-up."""
    timings = []
    for attempt in range(runs + 1):
        started = time.perf_counter()
        response = client.get(url, headers=headers or {})
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        if attempt:  # the first run warms caches and the connection
            timings.append(elapsed)
    return timings
