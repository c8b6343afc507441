"""``manage.py run_timer NAME``: run any timer's nearest slot here, as ``manage.py sweep``
runs the sweep's (once across the fleet; ``--force`` runs a slot of its own)."""

from django.core.management.base import CommandError

from jobs.management.timer_command import TimerCommand


class Command(TimerCommand):
    help = "Run a timer's nearest slot here, unless a worker or another run booked it already."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="The timer, as declared with @periodic (sweep, reconcile, …).")
        super().add_arguments(parser)

    def handle(self, *args, **options) -> None:
        if not options["name"].strip():
            raise CommandError("Name a timer.")
        self.timer = options["name"]
        self.runner = f"manage.py run_timer {self.timer}"
        super().handle(*args, **options)
