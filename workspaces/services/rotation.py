"""Re-encrypt every stored credential under the first key of ``CREDENTIALS_KEYS``.

Rotating the key: put the new key first in ``CREDENTIALS_KEYS`` and keep the old ones after
it (every key decrypts, the first encrypts), run ``manage.py rotate_credentials``, then drop
the old keys. A credential no key decrypts is left as it is and counted: it has to be
entered again. A credential stored before credentials were bound to their origin is bound
on the way to the origin of the address it is stored with (the repository's URL, the
connection's API address).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models

from workspaces import addresses, credentials
from workspaces.models import Repository, WorkConnection

# Every model that keeps an encrypted credential in a ``credential`` field.
HOLDERS: tuple[type[Repository] | type[WorkConnection], ...] = (Repository, WorkConnection)


@dataclass(frozen=True)
class Rotation:
    rotated: int = 0
    unreadable: int = 0


def reencrypt_stored_credentials() -> Rotation:
    rotated = unreadable = 0
    for model in HOLDERS:
        rows = model._default_manager.exclude(credential="").only("pk", "credential", *ORIGIN_FIELDS[model])
        for row in rows.iterator(chunk_size=500):
            token = row.credential
            found = credentials.opened(token)
            if not found.secret:
                unreadable += 1
                continue
            fresh = (
                credentials.rotate(token) if found.origin else credentials.seal(found.secret, _origin(row))
            )
            # Only if nobody wrote a new credential meanwhile (theirs is already under the new key).
            rotated += model._default_manager.filter(pk=row.pk, credential=token).update(credential=fresh)
    return Rotation(rotated=rotated, unreadable=unreadable)


# The fields that say where a holder's credential goes.
ORIGIN_FIELDS: dict[type[models.Model], tuple[str, ...]] = {
    Repository: ("url",),
    WorkConnection: ("kind", "api_url"),
}


def _origin(row: models.Model) -> str:
    if isinstance(row, Repository):
        return addresses.loose_origin(row.url)
    assert isinstance(row, WorkConnection)
    return row.api_origin()
