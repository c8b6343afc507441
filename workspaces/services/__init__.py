"""Plain service functions that do each workspace job's work; callable without the engine."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ObjectDoesNotExist
from django.db import models

from workspaces.errors import MissingRecord

Progress = Callable[[float, str], None]


def no_progress(percent: float, message: str = "") -> None:
    """The progress callback when no job is watching."""


def load[M: models.Model](model: type[M], pk: int) -> M:
    """Fetch a row by id; a missing row is a permanent failure (retrying cannot bring it back)."""
    try:
        return model._default_manager.get(pk=pk)
    except ObjectDoesNotExist:
        raise MissingRecord(f"{model.__name__} #{pk} does not exist.") from None
