"""Draining the queues from a script: ``manage.py runworker --burst`` in a process of its
own, as the demos run it (a worker's child processes need a process of their own)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import CommandError


def run_burst_worker(*args: str, log_path: Path, timeout: float = 300) -> float:
    """Run ``runworker --burst`` with ``args`` until nothing it serves is due, its output
    in ``log_path``; returns the seconds it took. CommandError when it fails."""
    started = time.monotonic()
    with log_path.open("w") as log:
        result = subprocess.run(
            [sys.executable, "manage.py", "runworker", "--burst", *args],
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0:
        raise CommandError(f"The worker exited with {result.returncode}; see {log_path}.")
    return time.monotonic() - started
