"""The Timers page (Platform → Timers): per timer its schedule in words, next slot, last
slot with its outcome, duration and job, the slots missed or skipped, and Pause, Resume and
Run now; a timer's page adds its recent slots and lets an operator change the interval of
an interval timer and pause it. What a timer runs is the code's: never editable here.

Seeing it needs ``platform.view_jobs``; every change (the buttons, the form) also needs
``platform.change_timer``, goes through ``jobs.timetable.schedule`` and is written to the
admin log (the timer's History): "Paused", "Run now (job #12)".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from jobs.admin.counting import BoundedCountingMixin
from jobs.admin.display import format_duration, timestamp
from jobs.admin.operations import next_url
from jobs.admin.permissions import ViewJobsPermissionMixin, can_view
from jobs.models import Timer, TimerSlot
from jobs.timetable import booking, clock, health, schedule
from jobs.timetable.calendar import describe_seconds

CHANGE_PERMISSION = "platform.change_timer"
#: A timer's page lists this many of its newest slots.
SLOTS_SHOWN = 20
#: The longest interval the form accepts: a year.
LONGEST_INTERVAL = 366 * 86400
# How a slot's outcome looks, in the job list's colours.
_BADGES = {"enqueued": "queued", "skipped": "cancelled", "missed": "cancelled"}


def can_change(user: Any) -> bool:
    return can_view(user) and bool(user.has_perm(CHANGE_PERMISSION))


class TimerForm(forms.ModelForm):
    class Meta:
        model = Timer
        fields = ("every", "enabled")

    def clean_every(self) -> int | None:
        every = self.cleaned_data.get("every")
        if self.instance.cron:
            return self.instance.every
        if every is None or not 1 <= every <= LONGEST_INTERVAL:
            raise forms.ValidationError(
                f"An interval is a whole number of seconds from 1 to {LONGEST_INTERVAL:,}."
            )
        return every


@admin.register(Timer)
class TimerAdmin(ViewJobsPermissionMixin, BoundedCountingMixin, admin.ModelAdmin):
    form = TimerForm
    list_display = ("name", "schedule", "state", "next_slot", "last_run", "missed_or_skipped")
    list_display_links = ("name",)
    sortable_by = ()
    actions = None
    change_list_template = "admin/platform/timer/change_list.html"
    change_form_template = "admin/platform/change_form.html"
    fieldsets = (
        (None, {"fields": ("name", "schedule", "every", "enabled", "state", "policies", "runs_as")}),
        ("Slots", {"fields": ("next_slots", "last_success", "missed_or_skipped", "recent_slots")}),
    )
    readonly_fields = (
        "name",
        "schedule",
        "state",
        "policies",
        "runs_as",
        "next_slots",
        "last_success",
        "missed_or_skipped",
        "recent_slots",
    )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_change(request.user)

    def get_readonly_fields(self, request: HttpRequest, obj: Timer | None = None) -> tuple[str, ...]:
        if obj is not None and obj.cron:
            return (*self.readonly_fields, "every")  # a cron timer's times are its code's
        return self.readonly_fields

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        if can_change(request.user):
            return (*self.list_display, "buttons")
        return self.list_display

    def get_queryset(self, request: HttpRequest) -> QuerySet[Timer]:
        return super().get_queryset(request).order_by("-declared", "name")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {"title": "Timers", "can_change": can_change(request.user), **(extra_context or {})}
        return super().changelist_view(request, context)

    # --- the form: only through the engine ---------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Timer, form: forms.ModelForm, change: bool) -> None:
        """The interval and the pause, each through ``jobs.timetable.schedule`` (a saved
        form would also write back what the booking changed since the page was drawn)."""
        if "every" in form.changed_data and obj.every is not None:
            schedule.set_interval(obj.name, obj.every)
        if "enabled" in form.changed_data:
            (schedule.resume if obj.enabled else schedule.pause)(obj.name)

    # --- the buttons -------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view  # login, staff check and CSRF protection
        return [
            path("<int:object_id>/pause/", wrap(self.pause_view), name="platform_timer_pause"),
            path("<int:object_id>/resume/", wrap(self.resume_view), name="platform_timer_resume"),
            path("<int:object_id>/run/", wrap(self.run_view), name="platform_timer_run"),
            *super().get_urls(),
        ]

    @method_decorator(require_POST)
    def pause_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        def pause(timer: Timer) -> tuple[str, SafeString]:
            schedule.pause(timer.name)
            return "Paused", format_html(
                "Timer {} is paused: no slot is booked until it is resumed.", timer.name
            )

        return self._act(request, object_id, pause)

    @method_decorator(require_POST)
    def resume_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        def resume(timer: Timer) -> tuple[str, SafeString]:
            schedule.resume(timer.name)
            return "Resumed", format_html("Timer {} is resumed from its next slot.", timer.name)

        return self._act(request, object_id, resume)

    @method_decorator(require_POST)
    def run_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        def run(timer: Timer) -> tuple[str, SafeString]:
            job = schedule.run_now(timer.name, by=request.user.get_username())
            url = reverse("admin:platform_job_change", args=[job.pk])
            return f"Run now (job #{job.pk})", format_html(
                'Timer {} runs now as a slot of its own: job <a href="{}">#{}</a>.', timer.name, url, job.pk
            )

        return self._act(request, object_id, run)

    def _act(
        self, request: HttpRequest, object_id: int, act: Callable[[Timer], tuple[str, SafeString]]
    ) -> HttpResponse:
        if not can_change(request.user):
            raise PermissionDenied
        timer = get_object_or_404(Timer, pk=object_id, declared=True)
        logged, said = act(timer)
        self.log_change(request, timer, logged)
        self.message_user(request, said, messages.SUCCESS)
        return HttpResponseRedirect(next_url(request, reverse("admin:platform_timer_changelist")))

    # --- cells ------------------------------------------------------------------------------

    @admin.display(description="schedule")
    def schedule(self, timer: Timer) -> str:
        text = booking.calendar_of(timer).describe()
        if timer.every is not None and timer.every != timer.declared_every and timer.declared_every:
            text += f" (declared: every {describe_seconds(timer.declared_every)})"
        return text

    @admin.display(description="state")
    def state(self, timer: Timer) -> SafeString:
        if not timer.declared:
            state, text = "gone", "no longer declared"
        elif not timer.enabled:
            state, text = "paused", "paused"
        elif health.state_of(timer, clock.now()).overdue:
            state, text = "overdue", "missed its runs"
        else:
            state, text = "on", "on"
        return format_html('<span class="timer-state timer-state--{}">{}</span>', state, text)

    @admin.display(description="next slot")
    def next_slot(self, timer: Timer) -> SafeString | str:
        if not timer.enabled or not timer.declared:
            return "—"
        now = clock.now()
        coming = booking.calendar_of(timer).next_after(max(now, timer.last_slot or now))
        return timestamp(coming, now)

    @admin.display(description="last slot")
    def last_run(self, timer: Timer) -> SafeString | str:
        row = timer.slots.select_related("job").order_by("-slot").first()
        return slot_summary(row) if row else "—"

    @admin.display(description="missed / skipped")
    def missed_or_skipped(self, timer: Timer) -> str:
        return f"{timer.missed:,} / {timer.skipped:,}"

    @admin.display(description="")
    def buttons(self, timer: Timer) -> SafeString | str:
        if not timer.declared:
            return ""
        toggle = ("resume", "Resume") if not timer.enabled else ("pause", "Pause")
        return format_html_join(
            " ",
            '<button type="submit" class="button timer-action timer-action--{}" form="timer-row-action" '
            'formaction="{}" data-timer="{}">{}</button>',
            (
                (verb, reverse(f"admin:platform_timer_{verb}", args=[timer.pk]), timer.name, label)
                for verb, label in (toggle, ("run", "Run now"))
            ),
        )

    @admin.display(description="policies")
    def policies(self, timer: Timer) -> str:
        return f"catch-up: {timer.catch_up} · overlap: {timer.overlap}"

    @admin.display(description="runs as")
    def runs_as(self, timer: Timer) -> str:
        return f"jobs of the type timer.{timer.name}"

    @admin.display(description="next slots")
    def next_slots(self, timer: Timer) -> str:
        slots = schedule.next_slots(timer.name, count=3) if timer.enabled else []
        return ", ".join(f"{slot:%Y-%m-%d %H:%M:%S %Z}" for slot in slots) or "—"

    @admin.display(description="last success")
    def last_success(self, timer: Timer) -> SafeString | str:
        return timestamp(timer.last_success_slot, clock.now())

    @admin.display(description="recent slots")
    def recent_slots(self, timer: Timer) -> SafeString | str:
        rows = list(timer.slots.select_related("job").order_by("-slot")[:SLOTS_SHOWN])
        if not rows:
            return "—"
        return format_html(
            '<table class="timer-slots"><thead><tr><th>slot</th><th>kind</th><th>run</th></tr></thead>'
            "<tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (f"{row.slot:%Y-%m-%d %H:%M:%S.%f}"[:-3], row.get_kind_display(), slot_summary(row))
                    for row in rows
                ),
            ),
        )


def slot_summary(row: TimerSlot) -> SafeString:
    """A slot's run as an operator reads it: outcome, duration, its job (or where it ran)."""
    job = row.job
    outcome = job.status if job is not None and row.outcome in booking.UNFINISHED else row.outcome
    started = job.started_at if job is not None and job.started_at else row.started_at
    finished = job.finished_at if job is not None and job.finished_at else row.finished_at
    took = format_duration(finished - started) if started and finished else ""
    where = (
        format_html('<a href="{}">job #{}</a>', reverse("admin:platform_job_change", args=[job.pk]), job.pk)
        if job is not None
        else row.ran_in
    )
    note = ""
    if row.outcome in (TimerSlot.Outcome.MISSED, TimerSlot.Outcome.SKIPPED) or row.covers > 1:
        note = f"{row.covers:,} slot{'s' if row.covers != 1 else ''}"
    badge = format_html(
        '<span class="job-status job-status--{}">{}</span>', _BADGES.get(outcome, outcome), outcome
    )
    parts = [badge, took, where, note, f"by {row.by}" if row.by else ""]
    return format_html_join(" · ", "{}", ((part,) for part in parts if part))
