"""``manage.py runworker``: run jobs until stopped (or, with --burst, until none is due)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from jobs import registry
from jobs.checks import WORKER_TAG
from jobs.conf import jobs_settings
from jobs.worker.supervisor import Supervisor, WorkerOptions


def parse_lane(spec: str) -> tuple[list[str], int]:
    """``ai:2`` → (["ai"], 2); ``default`` → (["default"], 1)."""
    name, _, slots = spec.partition(":")
    if not name or not (slots or "1").isdigit() or int(slots or 1) < 1:
        raise CommandError(f"--queue expects NAME or NAME:SLOTS with SLOTS ≥ 1, got {spec!r}.")
    return [name], int(slots or 1)


class Command(BaseCommand):
    help = "Run background jobs in a pool of child processes."
    # Only the engine's own checks (its settings), run in handle: the project's others
    # (models, admin, URLs, which import every admin module) are for ``manage.py check``,
    # and would add their time to every worker's start.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--queue",
            action="append",
            default=[],
            metavar="NAME:SLOTS",
            help="A queue with its own slots (repeatable). Default: every queue, sharing --concurrency slots.",
        )
        parser.add_argument(
            "--concurrency", type=int, default=2, help="Child processes when no --queue is given."
        )
        parser.add_argument(
            "--name", help="Worker name (default host:pid); a restart under the same name requeues its jobs."
        )
        parser.add_argument("--burst", action="store_true", help="Run what is due, then exit.")
        parser.add_argument(
            "--shutdown-timeout", type=float, default=None, help="Seconds running jobs get after SIGTERM."
        )
        parser.add_argument(
            "--poll-interval", type=float, default=None, help="Seconds between polls when no NOTIFY arrives."
        )
        parser.add_argument(
            "--no-schedules",
            action="store_true",
            help="Book no timer slots: leave the timers to cron, EventBridge or django-q2 (JOBS_SCHEDULER=false).",
        )

    def handle(self, *args, **options) -> None:
        self.check(tags=[WORKER_TAG])
        known = registry.queues()
        if options["queue"]:
            lanes = [parse_lane(spec) for spec in options["queue"]]
            unknown = sorted({queue for queues, _ in lanes for queue in queues} - set(known))
            if unknown:
                raise CommandError(
                    f"Unknown queue {', '.join(unknown)}; known queues: {', '.join(known) or 'none'}."
                )
        else:
            if options["concurrency"] < 1:
                raise CommandError("--concurrency must be at least 1.")
            if not known:
                raise CommandError("No job types are registered; nothing to run.")
            lanes = [(known, options["concurrency"])]
        worker_options = WorkerOptions(
            lanes=lanes,
            burst=options["burst"],
            shutdown_timeout=(
                options["shutdown_timeout"]
                if options["shutdown_timeout"] is not None
                else jobs_settings.SHUTDOWN_TIMEOUT
            ),
            poll_interval=options["poll_interval"] or jobs_settings.POLL_INTERVAL,
            schedules=jobs_settings.SCHEDULER and not options["no_schedules"],
        )
        if options["name"]:
            worker_options.name = options["name"]
        Supervisor(worker_options).run()
