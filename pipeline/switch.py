"""The model-calls switch: a stored setting changed at run time from the admin."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import jobs
from pipeline import job_types
from pipeline.models import ModelCallSwitch

SWITCH_ID = 1


def model_calls_enabled() -> bool:
    enabled = ModelCallSwitch.objects.filter(pk=SWITCH_ID).values_list("enabled", flat=True).first()
    return settings.MODEL_CALLS_DEFAULT if enabled is None else enabled


def current() -> ModelCallSwitch:
    row, _ = ModelCallSwitch.objects.get_or_create(
        pk=SWITCH_ID, defaults={"enabled": settings.MODEL_CALLS_DEFAULT}
    )
    return row


def set_model_calls(enabled: bool, user: Any = None) -> ModelCallSwitch:
    """Switch model calls on or off, recording who and when. Switching them on queues the
    email sweep at once, so emails that waited for the model do not wait for the timer."""
    with transaction.atomic():
        # Locks the one switch row, so two admins flipping it at once are serialised.
        current()
        row = ModelCallSwitch.objects.select_for_update().get(pk=SWITCH_ID)
        was_enabled = row.enabled
        row.enabled = enabled
        row.changed_by = user if getattr(user, "pk", None) else None
        row.changed_at = timezone.now()
        row.save()
        if enabled and not was_enabled:
            jobs.enqueue(job_types.SWEEP_EMAILS, {})
    return row
