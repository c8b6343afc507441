"""Base for the thin management commands that run one timer."""

from django.core.management.base import BaseCommand, CommandError

from jobs.timers import run_timer


class TimerCommand(BaseCommand):
    timer = ""

    def handle(self, *args, **options) -> None:
        try:
            results = run_timer(self.timer)
        except KeyError as exc:
            raise CommandError(str(exc.args[0])) from None
        for step, result in results.items():
            self.stdout.write(f"{step}: {result}")
