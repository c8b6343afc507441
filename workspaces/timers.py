"""The workspace timers: ``manage.py reconcile`` (15 min) and ``manage.py trial_sweep`` (1 h).

Each step runs under ``run_timer``'s advisory lock; both are also idempotent on their own
(dedupe keys, the reminder's unique pair), so two runs at once cannot double anything.
"""

from jobs.timers import periodic
from workspaces.services import reconcile, trials


@periodic("reconcile", every=900)
def reconcile_work_connections() -> str:
    return f"{reconcile.enqueue_due_syncs()} syncs queued"


@periodic("trial_sweep", every=3600)
def remind_trials_ending() -> str:
    return f"{trials.send_trial_reminders()} trial reminders sent"
