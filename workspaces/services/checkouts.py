"""Each repository's working folder under ``REPOSITORIES_ROOT``, and its removal.

A folder is named for one record alone (``<id>-<random>``, kept in ``checkout_folder``) and
made when that record is first fetched, so a record never finds another's files, even one
that reuses a deleted record's id. Deleting a repository (or the organization or workspace
holding it) queues ``checkout.remove`` for its folder, on the ingestion queue whose workers
hold the checkouts; the job removes that folder and nothing else.
"""

from __future__ import annotations

import fcntl
import logging
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from jobs import Job, enqueue
from workspaces import job_types
from workspaces.errors import NotReady
from workspaces.models import Repository

logger = logging.getLogger("workspaces.checkouts")

REMOVE_JOB = job_types.REMOVE_CHECKOUT
# What a folder name can be: "<id>-<16 hex>", or "<id>", the name every repository had before.
FOLDER = re.compile(r"^[0-9]{1,20}(-[0-9a-f]{16})?$")


def folder(repository: Repository) -> Path:
    """The repository's working folder; named (and recorded) on the first call."""
    if not repository.checkout_folder:
        name = f"{repository.pk}-{secrets.token_hex(8)}"
        Repository.objects.filter(pk=repository.pk, checkout_folder="").update(checkout_folder=name)
        repository.checkout_folder = Repository.objects.values_list("checkout_folder", flat=True).get(
            pk=repository.pk
        )
        # The folder of this id before folders were named per record may be another record's.
        if (Path(settings.REPOSITORIES_ROOT) / str(repository.pk)).is_dir():
            request_removal(str(repository.pk))
    return Path(settings.REPOSITORIES_ROOT) / repository.checkout_folder


@contextmanager
def lock(repository_id: int) -> Iterator[None]:
    """One fetch, read or removal of a repository's working folder at a time on this machine
    (an ingest job and a provisioning run may meet); the lock goes with the process holding it."""
    root = Path(settings.REPOSITORIES_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{repository_id}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def request_removal(name: str) -> Job:
    """Queue the removal of one working folder (in the caller's transaction)."""
    return enqueue(REMOVE_JOB, {"folder": name})


def forget(repository: Repository) -> Job | None:
    """A repository was deleted: queue the removal of its working folder, if it had one."""
    if repository.checkout_folder:
        return request_removal(repository.checkout_folder)
    if (Path(settings.REPOSITORIES_ROOT) / str(repository.pk)).is_dir():
        return request_removal(str(repository.pk))
    return None


def on_repository_deleted(sender: type[Repository], instance: Repository, **kwargs: object) -> None:
    forget(instance)


def remove(name: str) -> bool:
    """Remove the working folder ``name`` (without following a link out of it); whether
    there was one. A name that is not a working folder's is refused."""
    if not FOLDER.match(name):
        raise NotReady(f"Not the name of a working folder: {name!r}.")
    path = Path(settings.REPOSITORIES_ROOT) / name
    with lock(int(name.split("-", 1)[0])):
        if path.is_symlink():
            path.unlink()
            return True
        if not path.exists():
            return False
        shutil.rmtree(path)
    logger.info("Removed the working folder %s.", path)
    return True
