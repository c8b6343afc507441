"""Prove the engine's wheel works in a project that is not this repository.

    python scripts/install_proof.py dist/django_job_platform-0.1.0-py3-none-any.whl \\
        --database postgres://postgres@127.0.0.1:5432/install_proof \\
        --database mysql://root@127.0.0.1:3306/install_proof

For each database, in a temporary folder outside the repository (which is then on no
``sys.path``): a fresh virtualenv, the wheel installed with the extra of that database
(``postgres`` or ``mysql``) from the package index pip is set up with, a project made by
``django-admin startproject`` with an app of its own, the engine added to
``INSTALLED_APPS`` and as the ``TASKS`` backend, the named database dropped and created
afresh and migrated, a ``@job`` and a ``@task`` enqueued, ``runworker --burst``, the
task's result read through ``django.tasks``, and the "Background jobs" admin page opened
(Django's test client) as a staff user whose only permission is ``platform.view_jobs``.
Exits non-zero, with the step and its output, at the first step that fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = {"postgres": "postgres", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}
# The database driver each extra brings (its import name), and the check of what got installed.
EXTRA_DRIVERS = {"postgres": "psycopg", "mysql": "MySQLdb"}
DRIVERS_PRESENT = "import importlib.util as u; print(*[m for m in ('psycopg', 'MySQLdb') if u.find_spec(m)])"

SETTINGS_TAIL = """

# --- added by the install proof: the engine, its django.tasks backend, a database ---
INSTALLED_APPS += ["jobs", "shop"]
TASKS = {{"default": {{"BACKEND": "jobs.backends.JobsBackend"}}}}
DATABASES = {{"default": {database!r}}}
ALLOWED_HOSTS = ["testserver", "localhost"]
USE_TZ = True
"""

SHOP_TASKS = '''\
"""A job and a task, as a project declares them."""

from pathlib import Path

from django.conf import settings
from django.tasks import task

import jobs


@jobs.job("order.confirm", queue="default", attempts=3, dedupe="order:{order_id}")
def confirm_order(ctx: jobs.JobContext, *, order_id: int) -> None:
    ctx.progress(50, "confirming")
    (Path(settings.BASE_DIR) / f"confirmed-{order_id}").write_text(str(ctx.attempt))


@task
def add(a: int, b: int) -> int:
    return a + b
'''

ENQUEUE = """
import jobs
from shop.tasks import add, confirm_order

job = confirm_order.enqueue(order_id=7)
result = add.enqueue(2, 3)
print("job", job.pk, "task", result.id)
assert jobs.__file__.startswith({venv!r}), jobs.__file__  # the wheel's, not a checkout's
"""

CHECK = """
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.test import Client

from jobs.models import Job
from shop.tasks import add

job_id, result_id = {job_id}, {result_id!r}
job = Job.objects.get(pk=job_id)
assert job.status == "succeeded", (job.status, job.error)
assert (Path(settings.BASE_DIR) / "confirmed-7").read_text() == "1"
result = add.get_result(result_id)
assert result.status == "SUCCESSFUL" and result.return_value == 5, (result.status, result.errors)

viewer = User.objects.create_user("viewer", password="x", is_staff=True)
viewer.user_permissions.add(Permission.objects.get(content_type__app_label="platform", codename="view_jobs"))
client = Client()
client.force_login(viewer)
page = client.get("/admin/platform/job/")
assert page.status_code == 200, page.status_code
text = page.content.decode()
assert "Background jobs" in text and "order.confirm" in text and "shop.tasks.add" in text
print("checked: job", job_id, "succeeded; task result", result.return_value, "; admin page", len(text), "bytes")
"""


class StepFailed(Exception):
    pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wheel", type=Path)
    parser.add_argument(
        "--database", action="append", required=True, help="a database URL (dropped and created)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    options = parser.parse_args(argv)
    wheel = options.wheel.resolve()
    # One proof per database, side by side: each waits mostly on pip and on its database.
    with ThreadPoolExecutor(max_workers=len(options.database)) as pool:
        outcomes = list(
            pool.map(lambda url: _prove_in_a_folder(wheel, url, keep=options.keep), options.database)
        )
    for lines, _ in outcomes:
        print("\n".join(lines), flush=True)
    return 0 if all(passed for _, passed in outcomes) else 1


def _prove_in_a_folder(wheel: Path, url: str, *, keep: bool) -> tuple[list[str], bool]:
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="install-proof-"))
    lines = [f"install proof on {_shown(url)}, in {folder}:"]
    try:
        prove(wheel, url, folder, lines)
        lines.append(f"install proof on {_shown(url)}: passed in {time.monotonic() - started:.0f} s")
        return lines, True
    except (StepFailed, subprocess.TimeoutExpired) as exc:
        lines.append(f"install proof on {_shown(url)}: FAILED: {exc}")
        return lines, False
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def prove(wheel: Path, url: str, folder: Path, lines: list[str]) -> None:
    parts = urlsplit(url)
    extra = EXTRAS.get(parts.scheme)
    if extra is None:
        raise StepFailed(f"no extra for a {parts.scheme} database")
    if ROOT in folder.parents:
        raise StepFailed(f"{folder} lies inside the repository")
    venv = folder / "venv"
    python = venv / "bin" / "python"
    project = folder / "project"
    # Nothing of this checkout or its virtualenv leaks into the project's processes.
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PYTHON", "VIRTUAL_ENV", "DATABASE_", "JOBS_"))
    }
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"

    def run(step: str, *command: str | Path, cwd: Path = folder, timeout: float = 300) -> str:
        begun = time.monotonic()
        done = subprocess.run(
            [str(part) for part in command],
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise StepFailed(
                f"{step} exited with {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        lines.append(f"  {step}: {time.monotonic() - begun:.1f} s")
        return done.stdout

    # The interpreter this script runs on, without its virtualenv: a fresh one of its own.
    base = getattr(sys, "_base_executable", sys.executable)
    # No pip of its own (ensurepip takes half a minute): this interpreter's pip installs into it.
    run("virtualenv", base, "-m", "venv", "--without-pip", venv)
    run(
        "pip install",
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        f"{wheel}[{extra}]",
    )
    # Each extra brings its own database driver and no other: on MariaDB the engine runs
    # without psycopg.
    drivers = run("which drivers", python, "-c", DRIVERS_PRESENT).split()
    if drivers != [EXTRA_DRIVERS[extra]]:
        raise StepFailed(f"the {extra} extra installed the drivers {drivers}, not {EXTRA_DRIVERS[extra]}")
    lines.append(f"  drivers installed: {', '.join(drivers)}")
    run("startproject", venv / "bin" / "django-admin", "startproject", "proof", project)
    run("startapp", python, "manage.py", "startapp", "shop", cwd=project)
    (project / "shop" / "tasks.py").write_text(SHOP_TASKS)
    settings = project / "proof" / "settings.py"
    settings.write_text(settings.read_text() + SETTINGS_TAIL.format(database=_database(parts)))
    _recreate(parts)
    lines.append(f"  database {parts.path.lstrip('/')}: created afresh")
    run("migrate", python, "manage.py", "migrate", "--verbosity", "0", cwd=project)
    out = run("enqueue", python, "manage.py", "shell", "-c", ENQUEUE.format(venv=str(venv)), cwd=project)
    words = out.split()
    job_id, result_id = int(words[words.index("job") + 1]), words[words.index("task") + 1]
    run("runworker --burst", python, "manage.py", "runworker", "--burst", cwd=project, timeout=120)
    out = run(
        "result and admin page",
        python,
        "manage.py",
        "shell",
        "-c",
        CHECK.format(job_id=job_id, result_id=result_id),
        cwd=project,
    )
    lines.append("  " + out.strip().splitlines()[-1])


def _database(parts) -> dict[str, object]:
    """The ``DATABASES`` entry of a URL, as the docs tell a project to write it."""
    common = {
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }
    if EXTRAS[parts.scheme] == "postgres":
        return {"ENGINE": "django.db.backends.postgresql", **common}
    # docs/mariadb.md: utf8mb4, the tables' collation, READ COMMITTED.
    return {
        "ENGINE": "django.db.backends.mysql",
        **common,
        "OPTIONS": {
            "charset": "utf8mb4",
            "collation": "utf8mb4_unicode_ci",
            "isolation_level": "read committed",
        },
    }


def _recreate(parts) -> None:
    """Drop and create the proof's database (never the server: only this one database)."""
    name = parts.path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise StepFailed(f"refusing the database name {name!r}")
    if EXTRAS[parts.scheme] == "postgres":
        import psycopg

        with psycopg.connect(
            host=parts.hostname, port=parts.port or 5432, user=parts.username, password=parts.password,
            dbname="postgres", autocommit=True,
        ) as connection:  # fmt: skip
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')
        return
    import MySQLdb

    connection = MySQLdb.connect(
        host=parts.hostname, port=parts.port or 3306, user=parts.username or "", password=parts.password or ""
    )
    try:
        cursor = connection.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    finally:
        connection.close()


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return url.replace(f":{parts.password}@", ":***@") if parts.password else url


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
