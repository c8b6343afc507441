"""The jobs of a dedupe key, behind ``jobs.active_job`` and its siblings: the caller names
the key's fields, the type's template makes the key. Cancelling goes through
``jobs.store``, like every status change.

Every lookup filters on (type, dedupe_key): the active ones are served by the partial
unique index ``jobs_dedupe_active``, the others by ``jobs_dedupe_key``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Exists, QuerySet

from jobs import registry, store
from jobs.models import ACTIVE, Job


def _key(type_name: str, fields: Mapping[str, Any]) -> str | None:
    template = registry.get(type_name).key_template()
    template.check_fields(type_name, fields)
    return template.render(fields)


def jobs_for(type_name: str, fields: Mapping[str, Any]) -> QuerySet[Job]:
    key = _key(type_name, fields)
    if key is None:
        return Job.objects.none()
    return Job.objects.filter(type=type_name, dedupe_key=key).order_by("-id")


def active_job(type_name: str, fields: Mapping[str, Any]) -> Job | None:
    return jobs_for(type_name, fields).filter(status__in=ACTIVE).first()


def latest_job(type_name: str, fields: Mapping[str, Any]) -> Job | None:
    return jobs_for(type_name, fields).first()


def has_active_job(type_name: str, fields: Mapping[str, Any]) -> Exists:
    template = registry.get(type_name).key_template()
    template.check_fields(type_name, fields)
    return Exists(
        Job.objects.filter(type=type_name, status__in=ACTIVE, dedupe_key=template.expression(fields))
    )


def cancel_if_queued(type_name: str, fields: Mapping[str, Any]) -> Job | None:
    key = _key(type_name, fields)
    return None if key is None else store.cancel_if_queued(type_name, key)
