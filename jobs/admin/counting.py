"""Counting without counting a million rows: the tiles and the list's paginator.

The page must answer in well under 300 ms with a million jobs, every 3 seconds while the
system is busy, so nothing here counts the whole table: the tiles count exactly up to
``EXACT_UP_TO`` rows through indexes and estimate beyond that, and the paginator counts no
further than that either (see ``bench/admin_page.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ORDER_VAR, ChangeList
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from jobs.drivers import driver
from jobs.models import Job, Status

#: Counts (tiles, paginator) are exact up to this many rows; beyond it they are estimated
#: (tiles) or shown as "more than" (list), so no request walks a million index entries.
EXACT_UP_TO = 10_000
TILE_STATUSES = (Status.QUEUED, Status.RUNNING, Status.SUCCEEDED, Status.FAILED)


@dataclass(frozen=True)
class StatusCount:
    status: str
    count: int
    exact: bool

    @property
    def figure(self) -> str:
        if self.exact:
            return f"{self.count:,}"
        if self.count <= EXACT_UP_TO:  # statistics lag behind: all we know is "more than"
            return f"{EXACT_UP_TO:,}+"
        digits = max(len(str(self.count)) - 3, 0)  # three significant digits
        return f"≈ {round(self.count, -digits):,}"

    @property
    def caption(self) -> str:
        return "exact count" if self.exact else "estimate"

    @property
    def explanation(self) -> str:
        if self.exact:
            return f"Counted exactly: {self.count:,} {self.status} jobs (exact up to {EXACT_UP_TO:,})."
        return (
            f"More than {EXACT_UP_TO:,} {self.status} jobs: the figure is the database's estimate "
            "from its statistics, not a count."
        )


def status_counts(statuses: Iterable[str] = TILE_STATUSES) -> dict[str, StatusCount]:
    """Per status: an exact count up to ``EXACT_UP_TO``, the planner's estimate above it.

    Each bounded count stops after ``EXACT_UP_TO + 1`` rows: PostgreSQL reads them from a
    partial index (``jobs_rare_status``, or the claim and running indexes) or, for
    the status that fills most of the table, from the first pages of the table itself. So a
    million succeeded jobs cost what ten thousand do: about 5 ms (bench/admin_page.py).
    """
    counts: dict[str, StatusCount] = {}
    for status in statuses:
        if status == Status.FAILED:  # the failed list: dismissed jobs have left it
            rows = Job.objects.filter(driver().failed(), dismissed_at__isnull=True)
        else:
            rows = Job.objects.filter(status=status)
        bounded = rows.order_by()[: EXACT_UP_TO + 1].count()
        if bounded <= EXACT_UP_TO:
            counts[status] = StatusCount(status, bounded, exact=True)
        else:
            counts[status] = StatusCount(status, _estimate(status), exact=False)
    return counts


def _estimate(status: str) -> int:
    """The planner's row estimate for one status (from pg_statistic on PostgreSQL, from an
    index dive on MariaDB), or 0 elsewhere."""
    return driver().estimate_rows(status)


@dataclass(frozen=True)
class Tile:
    counted: StatusCount
    url: str
    selected: bool

    @property
    def status(self) -> str:
        return self.counted.status


class BoundedPaginator(Paginator):
    """Counts at most ``EXACT_UP_TO + 1`` rows: paging the newest jobs must not count all.

    It first reads the page about to be shown plus one row. When that is the last page, its
    rows give the count, so a filter that matches a few rows (or none) costs one scan, not
    a scan to list and another to count.
    """

    def __init__(
        self, queryset: QuerySet[Any], per_page: int, *args: Any, page_number: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(queryset, per_page, *args, **kwargs)
        self.queryset = queryset
        self.page_number = page_number
        self.page_rows: list[Any] | None = None

    @cached_property
    def count(self) -> int:
        bottom = (self.page_number - 1) * self.per_page
        if bottom > EXACT_UP_TO:  # past the last page that can be paged to: don't read it
            return self._bounded_count()
        window = list(self.queryset[bottom : bottom + self.per_page + 1])
        if len(window) <= self.per_page and (window or bottom == 0):
            self.page_rows = window  # the last page: nothing follows it
            return bottom + len(window)
        self.page_rows = window[: self.per_page] if window else None
        return self._bounded_count()

    def _bounded_count(self) -> int:
        # Only the primary key: the list's annotations (its records, read from the payload)
        # would otherwise be computed for every row counted (MariaDB does: 1.4 s at 10,000).
        return self.queryset.order_by().values("pk")[: EXACT_UP_TO + 1].count()

    def page(self, number: int | str) -> Page[Any]:
        valid = self.validate_number(number)
        if valid == self.page_number and self.page_rows is not None:
            return Page(self.page_rows, valid, self)
        return super().page(valid)


class JobChangeList(ChangeList):
    """The admin's changelist, told that its count may be a lower bound, and keeping its
    one order: a list that offers no sorting (``sortable_by = ()``) ignores ``?o=`` in the
    URL, which would otherwise sort a million rows by any column on every refresh."""

    count_is_bounded = False

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        if self.sortable_by is not None and not self.sortable_by:
            self.params.pop(ORDER_VAR, None)
        return super().get_ordering(request, queryset)

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = getattr(self.paginator, "page_rows", None)
        if rows is not None and not self.multi_page and not self.show_all:
            self.result_list = rows  # already read while counting: don't run the query again
        self.count_is_bounded = (
            isinstance(self.paginator, BoundedPaginator) and self.result_count > EXACT_UP_TO
        )

    @property
    def count_label(self) -> str:
        if self.count_is_bounded:
            return f"more than {EXACT_UP_TO:,}"
        return f"{self.result_count:,}"


class BoundedCountingMixin:
    """The section's lists count through ``BoundedPaginator`` and never show facet counts."""

    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> Paginator[Any]:
        try:
            page_number = max(int(request.GET.get("p", 1)), 1)
        except ValueError:
            page_number = 1
        return BoundedPaginator(
            queryset,
            per_page,
            orphans,
            allow_empty_first_page,
            page_number=page_number,
        )
