"""From a job to the records its payload names: a job's row and page link ``email #7`` to
the email's admin page.

The engine knows no domain model. A domain says which payload field holds the id of which
of its models, from its own ``admin.py``::

    jobs.register_payload_link("email_id", "pipeline.emailmessage", label="email")

The job list reads no payload (it can be large): ``annotate`` adds each registered field as
a text column of its own (``payload ->> 'email_id'``), and the links are made from those.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.apps import apps
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from django.db.models.fields.json import KT
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from jobs.models import Job


@dataclass(frozen=True)
class PayloadLink:
    field: str  # the payload field, e.g. "email_id"
    model: str  # the model's label, lower case: "pipeline.emailmessage"
    label: str  # how a link reads: "email" → "email #7"

    @property
    def column(self) -> str:
        """The annotation that carries the field's value (``annotate``)."""
        return f"linked_{self.field}"

    def url(self, value: str) -> str | None:
        """The record's admin page, or None when its model has no admin page."""
        app_label, model_name = self.model.split(".")
        try:
            return reverse(f"admin:{app_label}_{model_name}_change", args=[value])
        except NoReverseMatch:
            return None


_links: dict[str, PayloadLink] = {}


def register(field: str, model: str, *, label: str = "") -> PayloadLink:
    """Link payloads' ``field`` to ``model``'s admin page. Registering the same link twice is
    harmless; another model for a field already linked is an error."""
    if not field.isidentifier():
        raise ImproperlyConfigured(f"Payload link {field!r}: name a plain payload field, e.g. 'email_id'.")
    try:
        model_class = apps.get_model(model)
    except (LookupError, ValueError):
        raise ImproperlyConfigured(f"Payload link {field!r}: no model {model!r}.") from None
    link = PayloadLink(field, model_class._meta.label_lower, label or str(model_class._meta.verbose_name))
    if _links.get(field, link) != link:
        raise ImproperlyConfigured(f"The payload field {field!r} is already linked to {_links[field].model}.")
    _links[field] = link
    return link


def registered() -> list[PayloadLink]:
    return list(_links.values())


def unregister(field: str) -> None:
    """Take a link away again (an app's tests, say)."""
    _links.pop(field, None)


def annotate(queryset: QuerySet[Job]) -> QuerySet[Job]:
    """Each linked field of the payload as a text column: the list links records without
    reading payloads."""
    return queryset.annotate(**{link.column: KT(f"payload__{link.field}") for link in registered()})


def linked(job: Job) -> list[tuple[PayloadLink, str]]:
    """The records ``job`` names, as (link, id) pairs: ids only, never other payload values."""
    found = []
    for link in registered():
        if hasattr(job, link.column):
            value = getattr(job, link.column)
        else:  # a job read without ``annotate`` (its payload is loaded anyway)
            value = job.payload.get(link.field) if isinstance(job.payload, dict) else None
        text = "" if value is None or isinstance(value, bool) else str(value)
        if text.isdigit():
            found.append((link, text))
    return found


def record_links(job: Job) -> SafeString | str:
    """``email #7`` linking to the email's page, for each record the payload names."""
    pairs = linked(job)
    if not pairs:
        return ""
    return format_html_join(
        " ",
        "{}",
        ((_one(link, value),) for link, value in pairs),
    )


def _one(link: PayloadLink, value: str) -> SafeString:
    url = link.url(value) if _has_admin_page(link) else None
    if url is None:
        return format_html('<span class="job-record">{} #{}</span>', link.label, value)
    return format_html('<a class="job-record" href="{}">{} #{}</a>', url, link.label, value)


def _has_admin_page(link: PayloadLink) -> bool:
    model = apps.get_model(link.model)
    return model in admin.site._registry
