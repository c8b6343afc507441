"""``manage.py jobs_queue``: pause and resume a queue, set or reset its flow limits, show them.

manage.py jobs_queue pause ai
manage.py jobs_queue resume ai
manage.py jobs_queue limits ai --concurrency 4 --rate 100/m
manage.py jobs_queue limits ai --reset        # back to JOBS_QUEUES
manage.py jobs_queue show
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.flow import queues


class Command(BaseCommand):
    help = "Pause or resume a queue, set its fleet-wide limits, or show every queue's (docs/flow-control.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        verbs.add_parser("pause", help="Start nothing new from the queue.").add_argument("queue")
        verbs.add_parser("resume", help="Start its jobs again.").add_argument("queue")
        limits = verbs.add_parser("limits", help="Set the queue's limits in place of JOBS_QUEUES'.")
        limits.add_argument("queue")
        limits.add_argument("--concurrency", type=int, help="Jobs of the queue running at once (fleet-wide).")
        limits.add_argument("--rate", help="Starts per period: 100/m (also /s, /h).")
        limits.add_argument("--reset", action="store_true", help="Back to the limits of JOBS_QUEUES.")
        verbs.add_parser("show", help="Every queue's limits in force and whether it is paused.")

    def handle(self, *args: Any, verb: str, **options: Any) -> None:
        try:
            if verb == "pause":
                queues.pause(options["queue"])
                self.stdout.write(
                    f"Queue {options['queue']} is paused: its running jobs finish, nothing new starts."
                )
            elif verb == "resume":
                queues.resume(options["queue"])
                self.stdout.write(f"Queue {options['queue']} is resumed.")
            elif verb == "limits" and options["reset"]:
                queues.reset_limits(options["queue"])
                self.stdout.write(f"Queue {options['queue']} is back to the limits of JOBS_QUEUES.")
            elif verb == "limits":
                queues.set_limits(options["queue"], concurrency=options["concurrency"], rate=options["rate"])
                self.stdout.write(self._line(queues.current()[options["queue"]]))
            else:
                for limits in sorted(queues.current().values(), key=lambda found: found.queue):
                    self.stdout.write(self._line(limits))
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def _line(self, limits: queues.QueueLimits) -> str:
        source = f" (from {limits.source})" if limits.source else ""
        return f"{limits.queue}: {'paused, ' if limits.paused else ''}{limits.describe()}{source}"
