"""The trial sweep (hourly): email each organization whose trial ends within 3 days, once
per trial.

Once per trial: the reminder row (organization, trial end) is inserted before the email is
sent, in one transaction. A concurrent sweep inserting the same pair waits on the unique
index and then finds it taken, so it sends nothing; a failed send rolls the row back, so
the next sweep tries again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from workspaces.models import Organization, TrialReminder

logger = logging.getLogger("workspaces.trials")

REMIND_BEFORE = timedelta(days=3)


def ending_soon(now: datetime | None = None) -> QuerySet[Organization]:
    """Organizations on trial whose trial ends within 3 days and who were not told yet."""
    now = now or timezone.now()
    reminded = TrialReminder.objects.filter(
        organization=OuterRef("pk"), trial_ends_at=OuterRef("trial_ends_at")
    )
    return (
        Organization.objects.filter(
            plan=Organization.Plan.TRIAL, trial_ends_at__gt=now, trial_ends_at__lte=now + REMIND_BEFORE
        )
        .exclude(Exists(reminded))
        .order_by("trial_ends_at", "id")
    )


def remind(organization: Organization) -> bool:
    """Send this trial's reminder unless it was sent; True when this call sent it."""
    ends = organization.trial_ends_at
    if ends is None:  # not a trial (trials_ending lists only organizations with an end)
        return False
    try:
        # Holds the new reminder row (and its unique-index entry) until the email is out:
        # one short SMTP call, so a concurrent sweep waits briefly rather than sending twice.
        with transaction.atomic():
            TrialReminder.objects.create(
                organization=organization,
                trial_ends_at=ends,
                email=organization.billing_email,
            )
            send_mail(
                subject=f"Your trial of {organization.name} ends on {ends.day} {ends:%B %Y}",
                message=(
                    f"Hello,\n\nthe trial of {organization.name} ends on {ends.day} {ends:%B %Y at %H:%M} UTC. "
                    "Choose a plan before then to keep your workspaces, repositories and connections running.\n"
                ),
                from_email=settings.DEFAULT_FROM_EMAIL,
                recipient_list=[organization.billing_email],
            )
    except IntegrityError:
        return False  # another sweep sent it
    return True


def send_trial_reminders(now: datetime | None = None) -> int:
    """Returns how many reminders this run sent."""
    sent = 0
    for organization in ending_soon(now):
        try:
            sent += remind(organization)
        except Exception:  # one unreachable inbox must not stop the others
            logger.exception(
                "Trial reminder to organization #%s failed; next sweep retries.", organization.pk
            )
    return sent
