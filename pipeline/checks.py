"""System checks of the pipeline's settings that ``manage.py check --deploy`` reports."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.compatibility, deploy=True)
def check_vector_index_server(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Qdrant's local mode keeps the index in a folder of one machine, taken in turns by its
    processes: every task of a fleet would keep an index of its own."""
    if not settings.VECTOR_INDEX or settings.QDRANT_URL:
        return []
    return [
        Warning(
            f"QDRANT_URL is not set: the email index is Qdrant's local mode in {settings.QDRANT_PATH}, "
            "which serves the processes of one machine, one at a time.",
            hint="Set QDRANT_URL (and QDRANT_API_KEY) to a Qdrant server, or VECTOR_INDEX=false.",
            id="pipeline.W001",
        )
    ]
