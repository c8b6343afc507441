"""The worker registry, read-only: which worker processes run, and which went silent."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib import admin
from django.utils import timezone

from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.filters import OwnFiltersOnlyMixin
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.models import Worker


@admin.register(Worker)
class WorkerAdmin(ViewJobsPermissionMixin, OwnFiltersOnlyMixin, BoundedCountingMixin, admin.ModelAdmin):
    list_display = ("name", "host", "pid", "queues", "started_at", "last_seen", "state")
    search_fields = ("name", "host")
    ordering = ("-last_seen",)
    actions = None

    @admin.display(description="state")
    def state(self, worker: Worker) -> str:
        if worker.stopped_at:
            return "stopped"
        lease = timedelta(seconds=settings.JOBS_WORKER_LEASE)
        return "alive" if worker.last_seen >= timezone.now() - lease else "silent"
