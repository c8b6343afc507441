"""Which folders of this machine a repository may be read from (``local_path``, a ``file://``
URL or an absolute path given to git).

Only folders under one of ``REPOSITORY_LOCAL_ROOTS`` (empty in production: no host folder at
all), and never the platform's working folders (``REPOSITORIES_ROOT``, where every
repository's checkout lives), nor a folder holding them; never the platform's own folder
either (its code, its settings, its ``var/``) unless a root inside it says so (the demo's
``var/demo-git``). The path is resolved first (``..`` and symbolic links), so a link cannot
lead out of a root.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings


class LocalPathRefused(ValueError):
    """A folder the platform may not read."""


def check(path: str) -> Path:
    """The folder, resolved, if a repository may be read from it; LocalPathRefused otherwise."""
    resolved = Path(os.path.realpath(path))
    roots = [Path(os.path.realpath(root)) for root in settings.REPOSITORY_LOCAL_ROOTS if str(root)]
    if not roots:
        raise LocalPathRefused(
            "Repositories are not read from folders of this machine (REPOSITORY_LOCAL_ROOTS is empty)."
        )
    admitting = [root for root in roots if resolved.is_relative_to(root)]
    if not admitting:
        raise LocalPathRefused(
            f"{resolved} is outside the folders repositories may be read from (REPOSITORY_LOCAL_ROOTS)."
        )
    checkouts = Path(os.path.realpath(settings.REPOSITORIES_ROOT))
    if resolved.is_relative_to(checkouts) or checkouts.is_relative_to(resolved):
        raise LocalPathRefused(
            f"{resolved} is, or holds, the platform's working folders (REPOSITORIES_ROOT): "
            "it is never read as a repository."
        )
    code = Path(os.path.realpath(settings.BASE_DIR))
    # Inside the platform's folder only through a root set there on purpose (the demo's).
    if code.is_relative_to(resolved) or (
        resolved.is_relative_to(code) and not any(root.is_relative_to(code) for root in admitting)
    ):
        raise LocalPathRefused(
            f"{resolved} is, or holds, the platform's own code: it is never read as a repository."
        )
    return resolved
