"""A job's row and page link the records its payload names (``payload_links``)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from jobs.admin import payload_links
from jobs.models import Job


class JobRecordsMixin(admin.ModelAdmin):
    """Adds the linked payload fields to what the list and a job's page read, and the
    ``records`` cell that links them."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return payload_links.annotate(super().get_queryset(request))

    @admin.display(description="record", empty_value="")
    def records(self, job: Job) -> SafeString | str:
        return payload_links.record_links(job)
