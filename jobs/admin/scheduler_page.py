"""django-q2's pages as the timers' scheduler (``manage.py install_schedules``).

- A schedule runs only what ``jobs.schedule_guard`` allows: the form refuses any other
  function, hook or arguments, and a schedule the platform installed (``timer: <name>``)
  shows its call read-only; only whether it repeats and when it runs next are editable
  (its interval follows the timer's declaration, which ``install_schedules`` writes).
- Resubmitting a task queues it again: it needs the change permission (and still passes
  the guard).
- With ``JOBS_DJANGO_Q_SCHEDULER_ONLY=true`` (for a project whose django-q2 runs only the
  timers) its task lists leave the admin index; their pages stay reachable from a
  schedule's "last run". The default keeps a project's own django-q2 lists as they are.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.apps import apps
from django.contrib import admin
from django.http import HttpRequest

from jobs.conf import jobs_settings
from jobs.schedule_guard import schedule_refusal
from jobs.schedules import schedule_name
from jobs.timers import timers

#: What an installed timer's schedule leaves editable.
EDITABLE_WHEN_INSTALLED = ("repeats", "next_run")


def installed(schedule: Any) -> bool:
    """A schedule ``install_schedules`` wrote: named after a declared timer."""
    return schedule is not None and schedule.name in {schedule_name(timer) for timer in timers()}


class TimerScheduleForm(forms.ModelForm):
    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}

        def value(field: str) -> Any:  # a read-only field is not in the form: the row's
            return data[field] if field in data else getattr(self.instance, field, None)

        reason = schedule_refusal(
            value("func") or "", value("args"), value("kwargs"), value("hook"), value("intended_date_kwarg")
        )
        if reason:
            raise forms.ValidationError(reason, code="refused")
        return data


class TimerSchedulePage:
    """Mixed into django-q2's ScheduleAdmin."""

    form = TimerScheduleForm

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))  # type: ignore[misc]
        if installed(obj):
            editable = set(EDITABLE_WHEN_INSTALLED)
            fields += [
                field.name for field in obj._meta.fields if field.editable and field.name not in editable
            ]
        return list(dict.fromkeys(fields))


def _resubmit_action() -> Any:
    from django_q.admin import resubmit_task

    @admin.action(description="Resubmit selected tasks to queue", permissions=["change"])
    def resubmit_task_action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: Any) -> None:
        resubmit_task(modeladmin, request, queryset)

    return resubmit_task_action


def _not_in_index(self: admin.ModelAdmin, request: HttpRequest) -> dict[str, bool]:
    return {}


def _replace(site: admin.AdminSite, model: Any, prefix: str, attrs: dict[str, Any], *mixins: type) -> None:
    registered: Any = site._registry.get(model)
    if registered is None:
        return
    page = type(f"{prefix}{type(registered).__name__}", (*mixins, type(registered)), attrs)
    site.unregister(model)
    site.register(model, page)


def adapt_django_q_admin(site: admin.AdminSite = admin.site) -> None:
    if not apps.is_installed("django_q"):
        return
    # django-q2's own pages first, whoever imports this module first: the URLconf's
    # discovery imports them before ours, but a module that imports the engine's admin
    # earlier (a test, a script) would otherwise find nothing to adapt yet.
    import django_q.admin  # noqa: F401
    from django_q.models import Failure, OrmQ, Schedule, Success

    _replace(site, Schedule, "Timer", {}, TimerSchedulePage)
    hidden = jobs_settings.DJANGO_Q_SCHEDULER_ONLY
    for model in (Success, Failure, OrmQ):
        attrs: dict[str, Any] = {"get_model_perms": _not_in_index} if hidden else {}
        if model is not OrmQ:
            attrs["actions"] = [_resubmit_action()]
        _replace(site, model, "Scheduler", attrs)
