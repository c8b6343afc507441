"""Base for the thin management commands that run one timer (``manage.py sweep``)."""

from django.core.management.base import BaseCommand, CommandError


class TimerCommand(BaseCommand):
    """Runs the timer's nearest slot here, once across the fleet: a slot that a worker,
    another cron host or an earlier run booked already is not run again (``--force`` runs
    a slot of its own)."""

    timer = ""
    runner = ""  # how the slot's row names where it ran; "manage.py <timer>" by default

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even when the slot already ran (or the timer is paused), as a slot of its own.",
        )

    def handle(self, *args, **options) -> None:
        from jobs.timetable.outside import RunBusy, run_nearest_slot  # needs the models: not at import

        try:
            run = run_nearest_slot(
                self.timer, force=options["force"], runner=self.runner or f"manage.py {self.timer}"
            )
        except KeyError as exc:
            raise CommandError(str(exc.args[0])) from None
        except RunBusy as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(run.message)
        if run.ran:
            for step, result in run.results.items():
                self.stdout.write(f"{step}: {result}")
