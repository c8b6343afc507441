"""The section's list filters: choices come from the registry, never from the table."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from jobs import registry
from jobs.models import Status


class ChoiceFilter(admin.SimpleListFilter):
    """A filter on one column whose choices are known without SELECT DISTINCT on the table."""

    field = ""

    def choices_from(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        choices = self.choices_from()
        value = self.value()
        if value and value not in {key for key, _ in choices}:
            choices.append((value, value))  # e.g. a retired type still in old rows
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.field: value}) if value else queryset


class JobListFilter(ChoiceFilter):
    """A filter of the job list: a drop-down in the bar above the list, not a column."""

    template = "admin/platform/job/filter.html"


class StatusFilter(JobListFilter):
    title = "status"
    parameter_name = field = "status"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(value, str(label)) for value, label in Status.choices]


class QueueFilter(JobListFilter):
    title = "queue"
    parameter_name = field = "queue"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(queue, queue) for queue in registry.queues()]


class TypeFilter(JobListFilter):
    title = "type"
    parameter_name = field = "type"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(job_type.name, job_type.name) for job_type in registry.all_types()]


class OutcomeFilter(JobListFilter):
    """On the attempts page: did the job go back to the queue after this try, or fail?"""

    title = "what followed"
    parameter_name = field = "outcome"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(Status.QUEUED, "queued again (retry)"), (Status.FAILED, "failed for good")]


class WorkerStateFilter(admin.SimpleListFilter):
    """On the workers page: the running ones (alive or gone silent), or the stopped ones."""

    title = "state"
    parameter_name = "state"
    template = JobListFilter.template

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("running", "not stopped"), ("stopped", "stopped")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "running":
            return queryset.filter(stopped_at__isnull=True)
        if self.value() == "stopped":
            return queryset.filter(stopped_at__isnull=False)
        return queryset
