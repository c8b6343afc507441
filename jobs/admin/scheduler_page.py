"""django-q2 as the timers' scheduler only (``manage.py install_schedules``): its schedules
stay in the admin index; its own task lists (successful, failed and queued tasks) leave it,
because no work of the platform runs as a django-q2 task (jobs run on ``runworker``). Their
pages stay where they are, reached from a schedule's "last run".

``JOBS_DJANGO_Q_SCHEDULER_ONLY=false`` keeps the lists in the index, for a project that also runs
django-q2 tasks.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.http import HttpRequest

from jobs.conf import jobs_settings


def _not_in_index(self: admin.ModelAdmin, request: HttpRequest) -> dict[str, bool]:
    return {}


def hide_task_lists(site: admin.AdminSite = admin.site) -> None:
    if not jobs_settings.DJANGO_Q_SCHEDULER_ONLY or not apps.is_installed("django_q"):
        return
    from django_q.models import Failure, OrmQ, Success

    for model in (Success, Failure, OrmQ):
        registered: Any = site._registry.get(model)
        if registered is None:
            continue
        hidden = type(
            f"Scheduler{type(registered).__name__}", (type(registered),), {"get_model_perms": _not_in_index}
        )
        site.unregister(model)
        site.register(model, hidden)
