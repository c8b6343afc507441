"""retention.purge: blank AI prompt and output bodies past their organization's retention
window. The artifact rows stay (what ran, when, with which model); only the bodies go."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from workspaces.models import AIArtifact, Organization
from workspaces.services import Progress, no_progress

BATCH = 1000


def purge_expired(
    organization_id: int | None = None, progress: Progress = no_progress, now: datetime | None = None
) -> int:
    """Returns how many artifacts had their bodies purged."""
    now = now or timezone.now()
    organizations = Organization.objects.order_by("id")
    if organization_id is not None:
        organizations = organizations.filter(pk=organization_id)
    purged = 0
    for organization in organizations.only("id", "retention_days"):
        cutoff = now - timedelta(days=organization.retention_days)
        expired = AIArtifact.objects.filter(
            workspace__organization=organization, bodies_purged_at__isnull=True, created_at__lt=cutoff
        )
        while True:
            # Small batches keep each update's row locks short.
            ids = list(expired.order_by("created_at").values_list("id", flat=True)[:BATCH])
            if not ids:
                break
            purged += AIArtifact.objects.filter(pk__in=ids).update(prompt="", output="", bodies_purged_at=now)
        progress(50, f"{purged} artifacts purged so far")
    progress(100, f"{purged} artifacts purged")
    return purged
