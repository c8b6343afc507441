"""What a running handler gets as its first argument."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger("jobs.handler")


@dataclass
class JobContext:
    job_id: int
    type_name: str
    attempt: int
    max_attempts: int
    worker: str
    report: Callable[[int, str], None] = field(default=lambda percent, message: None, repr=False)

    @property
    def is_last_attempt(self) -> bool:
        """Is this try the last one, should it fail? (``jobs.retries``, the engine's rule.)"""
        from jobs import retries  # the rule reads the registry, and so the models

        return not retries.retried(self.attempt, self.max_attempts)

    def progress(self, percent: float, message: str = "") -> None:
        """Report how far the job is, as often as you like; the admin page shows it live.
        The row gets the latest report within ``JOBS_PROGRESS_INTERVAL`` (none is dropped
        for coming too soon after another), and the job's last one when it ends."""
        self.report(max(0, min(100, int(percent))), message)
