"""Check that a wheel of the engine holds the engine alone: `jobs/` (with its migrations,
templates and static files) and the distribution's metadata, nothing of the platform.

    python scripts/check_wheel.py dist/django_job_platform-0.1.0-py3-none-any.whl
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import PurePosixPath

# What the engine cannot run without: its app, its migrations, its admin's templates.
REQUIRED = (
    "jobs/apps.py",
    "jobs/migrations/0001_initial.py",
    "jobs/templates/admin/platform/job/change_list.html",
    "jobs/static/platform/records.css",
)


def problems(wheel: str) -> list[str]:
    names = zipfile.ZipFile(wheel).namelist()
    found = []
    for name in names:
        top = PurePosixPath(name).parts[0]
        if top != "jobs" and not top.endswith(".dist-info"):
            found.append(f"{name}: not the engine")
        elif "__pycache__" in name or name.endswith(".pyc"):
            found.append(f"{name}: compiled file")
    found += [f"{name}: missing" for name in REQUIRED if name not in names]
    return found


def main(wheels: list[str]) -> int:
    if not wheels:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for wheel in wheels:
        found = problems(wheel)
        failed = failed or bool(found)
        for problem in found:
            print(f"{wheel}: {problem}", file=sys.stderr)
        if not found:
            print(f"{wheel}: the engine alone ({len(zipfile.ZipFile(wheel).namelist())} files)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
