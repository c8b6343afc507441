"""Deleting an email, however it is deleted (the admin, a queryset, a cascade), deletes its
points from the vector index: ``index.forget`` is queued in the deleting transaction (a
rollback keeps the email and drops the job), and retried until Qdrant answers."""

from __future__ import annotations

from typing import Any

from django.conf import settings

import jobs
from pipeline import job_types
from pipeline.models import EmailMessage


def forget_deleted_email(sender: type[EmailMessage], instance: EmailMessage, **kwargs: Any) -> None:
    if settings.VECTOR_INDEX:
        jobs.enqueue(job_types.FORGET_EMAIL, {"email_id": instance.pk})
