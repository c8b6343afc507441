"""The engine's own timer steps (part of ``manage.py sweep``)."""

from datetime import timedelta

from jobs import coverage, metrics, periodic, store
from jobs.conf import jobs_settings
from jobs.timetable import booking


@periodic("sweep", every=300)
def reap_silent_jobs() -> str:
    result = store.reap()
    return f"{result.requeued} requeued, {result.failed} failed"


@periodic("sweep", every=300)
def prune_finished_jobs() -> str:
    return f"{store.prune()} pruned"


@periodic("sweep", every=300)
def prune_timer_slots() -> str:
    """The timers' booked slots, kept as long as finished jobs are."""
    return f"{booking.prune(timedelta(days=jobs_settings.KEEP_FINISHED_DAYS))} timer slots pruned"


@periodic("sweep", every=300)
def prune_flow_gates() -> str:
    """The gates of limit keys with no start left in any window (their next claim makes them again)."""
    return f"{store.prune_gates()} flow gates pruned"


@periodic("sweep", every=300)
def report_backlog_per_task() -> str:
    """The scaling signals (backlog per task, oldest due age, running, failed), to CloudWatch when configured."""
    return metrics.report_backlog()


@periodic("sweep", every=300)
def warn_about_unserved_queues() -> str:
    """Queues with due jobs and no live worker serving them: a warning each, in the log."""
    return coverage.report_unserved()
