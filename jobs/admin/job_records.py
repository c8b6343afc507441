"""A job's row and page link the records its payload names (``payload_links``): in the
list, under the job's type (a column of its own would take the width the list has not got
beside the admin's navigation at 1400 px); on its page, a line of its own."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.admin import payload_links
from jobs.models import Job


class JobRecordsMixin(admin.ModelAdmin):
    """Adds the linked payload fields to what the list and a job's page read, and the
    ``records`` cell that links them."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return payload_links.annotate(super().get_queryset(request))

    @admin.display(description="record", empty_value="—")
    def records(self, job: Job) -> SafeString | str:
        return payload_links.record_links(job)

    @admin.display(description="type")
    def type_and_records(self, job: Job) -> SafeString:
        """The type, linking to the job's page, and under it the records it names."""
        records = payload_links.record_links(job)
        return format_html(
            '<a href="{}">{}</a>{}',
            reverse("admin:platform_job_change", args=[job.pk]),
            job.type,
            format_html('<span class="job-records">{}</span>', records) if records else "",
        )
