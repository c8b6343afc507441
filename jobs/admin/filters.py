"""The section's list filters: choices come from the registry (and the tasks of the
django.tasks backend), never from the table; and the rule that the URL may set these
filters and nothing else."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from jobs import registry
from jobs.drivers import driver
from jobs.models import Status


class OwnFiltersOnlyMixin:
    """A list takes from its URL only its own filters (besides the admin's page, search,
    "show all" and error parameters, which never reach a lookup).

    Django's admin turns any other parameter into a queryset lookup for anyone who may see
    the list: ``?error__regex=`` or ``?payload__contains=`` would make PostgreSQL scan and
    match every row, again on every 3-second refresh. Such a URL is a bad request (400): a
    list silently shown unfiltered would look filtered to whoever follows the link."""

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        own = {
            getattr(list_filter, "parameter_name", None)
            for list_filter in self.get_list_filter(request)  # type: ignore[attr-defined]
        }
        return lookup in own


class IdOrKeySearchMixin:
    """The list's search box finds a row by its id (``42`` or ``#42``) or its exact dedupe
    key: both index lookups, never a LIKE over millions of rows."""

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        match = Q(dedupe_key=term)
        number = term.removeprefix("#")
        if number.isdigit() and int(number) < 2**63:
            match |= Q(pk=int(number))
        return queryset.filter(match), False


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


#: The status filter's choice for failed jobs an operator dismissed: they are no longer in
#: the failed list (``jobs.store.dismiss``).
DISMISSED = "dismissed"


class StatusFilter(JobListFilter):
    title = "status"
    parameter_name = field = "status"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(value, str(label)) for value, label in Status.choices] + [(DISMISSED, "failed, dismissed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == Status.FAILED:
            return queryset.filter(driver().failed(), dismissed_at__isnull=True)
        if value == DISMISSED:
            return queryset.filter(driver().failed(), dismissed_at__isnull=False)
        return super().queryset(request, queryset)


class QueueFilter(JobListFilter):
    title = "queue"
    parameter_name = field = "queue"

    def choices_from(self) -> list[tuple[str, str]]:
        return [(queue, queue) for queue in registry.queues()]


class TypeFilter(JobListFilter):
    title = "type"
    parameter_name = field = "type"

    def choices_from(self) -> list[tuple[str, str]]:
        """The declared job types, then the django.tasks tasks this process has loaded."""
        return [(name, name) for name in registry.names()]


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
