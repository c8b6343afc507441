"""Origins: the first email recorded under a key (normalised Message-ID, else a hash of
the normalised content). The key's unique index decides between two copies processed at
the same moment, so there is always exactly one origin."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from pipeline.models import EmailMessage, Origin


def record(email: EmailMessage, key: str) -> int:
    """Record ``email`` as the origin of ``key`` unless one exists; returns the origin's id."""
    for _ in range(3):
        found = Origin.objects.filter(key=key).values_list("email_id", flat=True).first()
        if found is not None:
            return found
        own = Origin.objects.filter(email=email).values_list("email_id", flat=True).first()
        if own is not None:
            return own  # recorded earlier under another key (reprocessed after a change)
        try:
            with transaction.atomic():
                Origin.objects.create(key=key[:300], email=email)
            return email.pk
        except IntegrityError:
            continue  # a copy won the race: read its row
    raise IntegrityError(f"Could not record the origin {key!r} of email #{email.pk}.")
