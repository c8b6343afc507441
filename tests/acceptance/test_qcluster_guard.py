"""A real ``manage.py qcluster`` runs the timers' schedules and refuses any other: a
schedule pointed at ``subprocess.getoutput`` (written straight into the table, past the
admin) fails with the reason and its command never runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.models import Failure, Schedule, Success

from tests.support.paths import ROOT
from tests.support.waiting import wait_for
from tests.support.workers import worker_environment

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_qcluster__runs_the_timers_schedule_and_refuses_a_shell_command(tmp_path) -> None:
    marker = tmp_path / "owned"
    call_command("install_schedules", stdout=StringIO())
    Schedule.objects.exclude(name="timer: trial_sweep").delete()
    Schedule.objects.update(next_run=timezone.now())
    Schedule.objects.create(
        name="owned",
        func="subprocess.getoutput",
        args=repr(f"touch {marker}"),
        schedule_type=Schedule.MINUTES,
        minutes=1,
        next_run=timezone.now(),
    )
    log = open(tmp_path / "qcluster.log", "w")  # noqa: SIM115 - closed below
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env={**worker_environment(), "TEST_Q_GUARD_CYCLE": "30"},  # schedules at once
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        # The scheduler runs on the guard loop's first turn (a 30 s cycle), then 30 s later.
        failure = wait_for(lambda: Failure.objects.filter(group="owned").first(), timeout=180, interval=0.5)
        success = wait_for(
            lambda: Success.objects.filter(group="timer: trial_sweep").first(), timeout=60, interval=0.5
        )
    finally:
        # Killed, not stopped: django-q2's cluster waits out its monitor's timeout on SIGTERM,
        # and what the test reads is written already (the log line by line, the rows committed).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(cluster.pid, signal.SIGKILL)
        cluster.wait(timeout=10)
        log.close()

    assert not marker.exists()
    assert "'subprocess.getoutput' is not one of the platform's timers" in failure.result
    assert success.func == "jobs.timers.run_timer"
    assert "refused" in (tmp_path / "qcluster.log").read_text()
