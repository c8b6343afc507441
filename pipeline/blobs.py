"""Raw emails in blob storage (the ``blobs`` alias of ``STORAGES``), named by their sha256
so a re-import writes nothing new."""

from __future__ import annotations

import hashlib

from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages


def storage() -> Storage:
    return storages["blobs"]


def name_for(sha256: str) -> str:
    return f"emails/{sha256[:2]}/{sha256}.eml"


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def write(raw: bytes, sha256: str) -> str:
    """Store ``raw`` under its content address; returns its name. Idempotent.

    ``sha256`` is the caller's ``digest(raw)``: intake needs it first to find a re-import,
    and hashing a 20 MB email twice is a waste.
    """
    name = name_for(sha256)
    store = storage()
    if not store.exists(name):
        saved = store.save(name, ContentFile(raw))
        # Overwrite must be allowed (same name, same bytes), so the name never gets a suffix.
        if saved != name:
            raise ImproperlyConfigured(
                f"Blob storage renamed {name} to {saved}: allow overwriting in STORAGES['blobs']."
            )
    return name


def read(name: str) -> bytes:
    with storage().open(name, "rb") as handle:
        return handle.read()


def delete(name: str) -> None:
    """Remove a blob that no row refers to."""
    storage().delete(name)
