"""Which folders of this machine a repository may be read from (``local_path``, a ``file://``
URL or an absolute path given to git).

Only folders under one of ``REPOSITORY_LOCAL_ROOTS`` (empty in production: no host folder at
all), and never the platform's working folders (``REPOSITORIES_ROOT``, where every
repository's checkout lives) or the platform's own code, nor a folder holding either. The
path is resolved first (``..`` and symbolic links), so a link cannot lead out of a root.
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
    if not any(resolved.is_relative_to(root) for root in roots):
        raise LocalPathRefused(
            f"{resolved} is outside the folders repositories may be read from (REPOSITORY_LOCAL_ROOTS)."
        )
    for kept, what in (
        (
            Path(os.path.realpath(settings.REPOSITORIES_ROOT)),
            "the platform's working folders (REPOSITORIES_ROOT)",
        ),
        (Path(os.path.realpath(settings.BASE_DIR)), "the platform's own code"),
    ):
        if resolved.is_relative_to(kept) or kept.is_relative_to(resolved):
            raise LocalPathRefused(f"{resolved} is, or holds, {what}: it is never read as a repository.")
    return resolved
