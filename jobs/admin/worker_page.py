"""The worker registry, read-only: which worker processes run, and which went silent. Its
queues read as text ("default, mail:2"), and stopped workers can be filtered out."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.utils import timezone
from django.utils.safestring import SafeString

from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.display import timestamp
from jobs.admin.filters import OwnFiltersOnlyMixin, WorkerStateFilter
from jobs.admin.permissions import ViewJobsPermissionMixin
from jobs.conf import jobs_settings
from jobs.models import Worker


@admin.register(Worker)
class WorkerAdmin(ViewJobsPermissionMixin, OwnFiltersOnlyMixin, BoundedCountingMixin, admin.ModelAdmin):
    list_display = ("name", "host", "pid", "queues_text", "started", "seen", "state")
    list_filter = (WorkerStateFilter,)
    search_fields = ("name", "host")
    change_list_template = "admin/platform/change_list.html"
    change_form_template = "admin/platform/change_form.html"
    fields = ("name", "host", "pid", "queues_text", "started_at", "last_seen", "stopped_at", "state")
    readonly_fields = ("queues_text", "state")
    ordering = ("-last_seen",)
    actions = None

    @admin.display(description="state")
    def state(self, worker: Worker) -> str:
        if worker.stopped_at:
            return "stopped"
        lease = timedelta(seconds=jobs_settings.WORKER_LEASE)
        return "alive" if worker.last_seen >= timezone.now() - lease else "silent"

    @admin.display(description="queues")
    def queues_text(self, worker: Worker) -> str:
        """As given to ``runworker --queue`` (``mail:2`` is the mail queue with two slots)."""
        given = worker.queues if isinstance(worker.queues, list) else [worker.queues]
        queues = [queue.strip() for entry in given for queue in str(entry).split(",") if queue.strip()]
        return ", ".join(queues) or "every queue"

    @admin.display(description="started", ordering="started_at")
    def started(self, worker: Worker) -> SafeString | str:
        return timestamp(worker.started_at, timezone.now())

    @admin.display(description="last seen", ordering="last_seen")
    def seen(self, worker: Worker) -> SafeString | str:
        return timestamp(worker.last_seen, timezone.now())
