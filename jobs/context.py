"""What a running handler gets as its first argument."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.workflow.flow import Flow

logger = logging.getLogger("jobs.handler")


def _no_results() -> dict[str, Any]:
    return {}


@dataclass
class JobContext:
    job_id: int
    type_name: str
    attempt: int
    max_attempts: int
    worker: str
    report: Callable[[int, str], None] = field(default=lambda percent, message: None, repr=False)
    # A workflow step's (``jobs.workflow``): its workflow, its own id and name; None and ""
    # for a job of its own.
    workflow_id: int | None = None
    step_id: int | None = None
    step_name: str = ""
    read_results: Callable[[], dict[str, Any]] = field(default=_no_results, repr=False)
    _results: dict[str, Any] | None = field(default=None, repr=False)

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

    @property
    def upstream_results(self) -> dict[str, Any]:
        """What each step this step waited for returned, by step name (a workflow step's;
        empty for a job of its own). Read once, on first use."""
        if self._results is None:
            self._results = self.read_results()
        return self._results

    def add_steps(self, *flows: Flow) -> list[int]:
        """Add steps to this step's workflow while it runs (``jobs.step``, ``jobs.chain``,
        ``jobs.group``; several run in parallel): they start when this step succeeds, and
        the steps that wait for it wait for them too. Adding steps under names the
        workflow already holds adds nothing (a retried try adds what the first one did
        once). Returns their ids; a job outside a workflow raises ``InvalidTransition``."""
        from jobs.errors import InvalidTransition

        if self.step_id is None:
            raise InvalidTransition(f"Job #{self.job_id} is not a workflow step: it cannot add steps.")
        from jobs.workflow import progress

        return progress.add(self.step_id, flows)
