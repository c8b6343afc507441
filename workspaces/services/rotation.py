"""Re-encrypt every stored credential under the first key of ``CREDENTIALS_KEYS``.

Rotating the key: put the new key first in ``CREDENTIALS_KEYS`` and keep the old ones after
it (every key decrypts, the first encrypts), run ``manage.py rotate_credentials``, then drop
the old keys. A credential no key decrypts is left as it is and counted: it has to be
entered again.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.fernet import InvalidToken
from django.db import models

from workspaces import credentials
from workspaces.models import Repository, WorkConnection

# Every model that keeps an encrypted credential in a ``credential`` field.
HOLDERS: tuple[type[models.Model], ...] = (Repository, WorkConnection)


@dataclass(frozen=True)
class Rotation:
    rotated: int = 0
    unreadable: int = 0


def reencrypt_stored_credentials() -> Rotation:
    rotated = unreadable = 0
    for model in HOLDERS:
        rows = model._default_manager.exclude(credential="").values_list("pk", "credential")
        for pk, token in rows.iterator(chunk_size=500):
            try:
                fresh = credentials.rotate(token)
            except InvalidToken:
                unreadable += 1
                continue
            # Only if nobody wrote a new credential meanwhile (theirs is already under the new key).
            rotated += model._default_manager.filter(pk=pk, credential=token).update(credential=fresh)
    return Rotation(rotated=rotated, unreadable=unreadable)
