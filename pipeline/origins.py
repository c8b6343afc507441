"""Origins: the first email recorded under a key (normalised Message-ID, else a hash of
the normalised content). The key's unique index decides between two copies processed at
the same moment, so there is always exactly one origin."""

from __future__ import annotations

from django.db import IntegrityError

from pipeline.models import EmailMessage, Origin


def record(email: EmailMessage, key: str) -> int:
    """Record ``email`` as the origin of ``key`` unless one exists; returns the origin's id.

    ``INSERT … ON CONFLICT DO NOTHING`` then a read: the unique index makes the insert of a
    concurrent copy wait for the first one's commit, then skip, so both read one origin.
    """
    key = key[:300]
    Origin.objects.bulk_create([Origin(key=key, email=email)], ignore_conflicts=True)
    found = Origin.objects.filter(key=key).values_list("email_id", flat=True).first()
    if found is not None:
        return found
    # Only the email's own row conflicted: it was recorded earlier under another key
    # (reprocessed after the key's rules changed). It stays the origin it was.
    own = Origin.objects.filter(email=email).values_list("email_id", flat=True).first()
    if own is None:
        raise IntegrityError(f"Could not record the origin {key!r} of email #{email.pk}.")
    return own
