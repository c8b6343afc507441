"""The jobs of a dedupe key, behind ``jobs.active_job`` and its siblings: the caller names
the key's fields, the type's template makes the key. Cancelling goes through
``jobs.store``, like every status change.

Every lookup filters on (type, dedupe_key): the active ones are served by the partial
unique index ``jobs_dedupe_active``, the others by ``jobs_dedupe_key``.

``jobs_about`` and ``latest_jobs_about`` ask across types: every type keyed by the same
fields (``repository.ingest``, ``repository.analyse``, … all keyed by ``repository_id``),
which is what a record's admin page shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Exists, Q, QuerySet

from jobs import registry, store
from jobs.drivers import driver
from jobs.keys import KeyTemplate
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


# --- across types: the jobs about one subject -------------------------------------------------


def _templates_keyed_by(fields: Iterable[str]) -> list[tuple[KeyTemplate, list[str]]]:
    """The key templates of exactly these fields, each with the types that declare it."""
    wanted = set(fields)
    grouped: dict[str, tuple[KeyTemplate, list[str]]] = {}
    for job_type in registry.all_types():
        template = job_type.dedupe
        if template is not None and set(template.fields) == wanted:
            grouped.setdefault(template.template, (template, []))[1].append(job_type.name)
    return list(grouped.values())


def subject_keys(fields: Mapping[str, Any]) -> list[str]:
    """The dedupe keys these fields make, one per template keyed by exactly them."""
    keys = (template.render(fields) for template, _ in _templates_keyed_by(fields))
    return sorted({key for key in keys if key is not None})


def jobs_about(fields: Mapping[str, Any]) -> QuerySet[Job]:
    """Every kept job of every type keyed by exactly these fields, newest first."""
    match = Q(pk__in=[])
    for template, names in _templates_keyed_by(fields):
        key = template.render(fields)
        if key is not None:
            match |= Q(type__in=names, dedupe_key=key)
    return Job.objects.filter(match).order_by("-id")


def latest_jobs_about(field: str, values: Iterable[Any]) -> dict[Any, Job]:
    """The newest job about each value of ``field`` (of any type keyed by it alone), in one
    query: a list page's "last job" column costs one statement, not one per row.

    Each key's newest job is the first entry of the ``jobs_dedupe_key`` index (dedupe_key,
    id) read backwards (the driver's ``newest_of_keys``: one statement on PostgreSQL, a subquery per key elsewhere),
    so kept history does not slow it down. The rows carry no payload and no error: a list
    shows neither.
    """
    values = list(values)
    by_key: dict[str, Any] = {}
    types: list[str] = []
    for template, names in _templates_keyed_by([field]):
        types += names
        for value in values:
            key = template.render({field: value})
            if key is not None:  # a value that makes no key
                by_key[key] = value
    if not by_key:
        return {}
    newest = driver().newest_of_keys(list(by_key), types)
    latest: dict[Any, Job] = {}
    for job in Job.objects.filter(newest).defer("payload", "error"):
        value = by_key[job.dedupe_key]  # type: ignore[index]  # every row matched a key
        if value not in latest or job.pk > latest[value].pk:
            latest[value] = job
    return latest
