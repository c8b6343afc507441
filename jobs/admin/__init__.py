"""The engine's admin section, "Background jobs": the job list and a job's page, the failed
tries and the worker registry. Seeing it needs ``platform.view_jobs``; Retry and Cancel
also need ``platform.change_job``.

    permissions   who may see the section and who may operate
    counting      the tiles and the list's count, bounded so a million rows cost nothing
    display       durations, relative times, badges
    filters       status, queue, type (from the registry), and an attempt's outcome
    links         the hook through which other apps add links to the page
    operations    Retry and Cancel: views, bulk actions, all through ``jobs.store``
    job_page      the job list and a job's own page
    attempt_page  the failed tries (audit)
    worker_page   the worker registry

Other apps use only ``register_link`` from here; ``bench/admin_page.py`` times the page
with ``status_counts`` and the refresh header.
"""

from jobs.admin.attempt_page import JobAttemptAdmin
from jobs.admin.counting import status_counts
from jobs.admin.job_page import REFRESH_HEADER, JobAdmin
from jobs.admin.links import PageLink, register_link
from jobs.admin.worker_page import WorkerAdmin

__all__ = [
    "REFRESH_HEADER",
    "JobAdmin",
    "JobAttemptAdmin",
    "PageLink",
    "WorkerAdmin",
    "register_link",
    "status_counts",
]
