"""``manage.py install_schedules``: schedule every timer in django-q2 (instead of cron)."""

from django.core.management.base import BaseCommand

from jobs.schedules import install_schedules


class Command(BaseCommand):
    help = "Create or update one django-q2 Schedule per timer (sweep, reconcile, trial_sweep, …). Idempotent."

    def handle(self, *args, **options) -> None:
        result = install_schedules()
        for label, timers in (
            ("created", result.created),
            ("updated", result.updated),
            ("unchanged", result.unchanged),
            ("removed", result.removed),
        ):
            if timers:
                self.stdout.write(f"{label}: {', '.join(timers)}")
