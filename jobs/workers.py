"""The worker registry: a row per worker process (``jobs.models.Worker``: its name, host,
pid, lanes, when it was last seen and when it stopped).

A worker registers under its name when it starts and unregisters when it stops; its
heartbeat (``jobs.store.heartbeat``) renews ``last_seen`` along with its jobs, and the
reaper (``jobs.store.reap``) takes back the jobs of a worker not seen for
``JOBS_WORKER_LEASE``.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from jobs import store
from jobs.conf import jobs_settings
from jobs.errors import InvalidTransition
from jobs.models import Worker


def register(name: str, host: str, pid: int, queues: list[str]) -> store.ReapResult:
    """Add or renew this worker's row, then requeue what it left running last time.

    Refuses a name that a live worker (seen within the lease) is using.
    """
    lease = timedelta(seconds=jobs_settings.WORKER_LEASE)
    with transaction.atomic():
        # Locks the one row of the name, so two workers starting under it take turns.
        existing = Worker.objects.select_for_update().filter(name=name).first()
        if (
            existing
            and existing.stopped_at is None
            and existing.last_seen > timezone.now() - lease
            and (existing.host, existing.pid) != (host, pid)
        ):
            raise InvalidTransition(
                f"A live worker already runs under the name {name!r} "
                f"(pid {existing.pid} on {existing.host}); choose another --name."
            )
        Worker.objects.update_or_create(
            name=name,
            defaults={
                "host": host,
                "pid": pid,
                "queues": queues,
                "started_at": timezone.now(),
                "last_seen": timezone.now(),
                "stopped_at": None,
            },
        )
    return store.recover_worker(name)


def unregister(name: str) -> None:
    """This worker stopped: its row stays (the admin shows it) until pruned."""
    Worker.objects.filter(name=name).update(stopped_at=Now(), last_seen=Now())
