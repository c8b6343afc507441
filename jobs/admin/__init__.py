"""The engine's admin section, "Background jobs": the job list and a job's page, the failed
tries and the worker registry. Seeing it needs ``platform.view_jobs``; Retry and Cancel
also need ``platform.change_job``.

    permissions   who may see the section and who may operate
    counting      the tiles and the list's count, bounded so a million rows cost nothing
    display       durations, relative times, badges
    filters       status, queue, type (from the registry), and an attempt's outcome
    links         the hook through which other apps add links to the page
    payload_links the hook through which other apps link a job to the records it names
    operations    Retry and Cancel: views, bulk actions, all through ``jobs.store``, and
                  who did them (the admin log)
    job_records   a job's row and page link its records
    job_page      the job list and a job's own page
    attempt_page  the failed tries (audit)
    worker_page   the worker registry
    timer_page    the Timers page: schedules, slots, Pause, Resume, Run now (``jobs.timetable``)
    flow_page     the flow-control page (Queues): limits and usage, Pause, Resume, the
                  queues' limits (``jobs.flow``)
    workflow_page the Workflows page: a workflow's steps as a graph (``workflow_graph``),
                  Retry and Cancel (``jobs.workflow``)
    record_page   a domain record's pages: its recent jobs, last job and job buttons
                  (``jobs.RecordJobsMixin``, ``jobs.JobButton``)
    scheduler_page django-q2's pages: schedules run only the timers, task lists out of
                   the index when it only schedules timers

Other apps use the public API (``jobs.register_admin_link``, ``jobs.register_payload_link``,
``jobs.RecordJobsMixin``, ``jobs.JobButton``); ``bench/admin_page.py`` times the page with
``status_counts`` and the refresh header.
"""

from jobs.admin.attempt_page import JobAttemptAdmin
from jobs.admin.counting import status_counts
from jobs.admin.flow_page import QueueAdmin
from jobs.admin.job_page import REFRESH_HEADER, JobAdmin
from jobs.admin.links import PageLink, register_link
from jobs.admin.scheduler_page import adapt_django_q_admin
from jobs.admin.timer_page import TimerAdmin
from jobs.admin.worker_page import WorkerAdmin
from jobs.admin.workflow_page import WorkflowAdmin

adapt_django_q_admin()

__all__ = [
    "REFRESH_HEADER",
    "JobAdmin",
    "JobAttemptAdmin",
    "PageLink",
    "QueueAdmin",
    "TimerAdmin",
    "WorkerAdmin",
    "WorkflowAdmin",
    "register_link",
    "status_counts",
]
