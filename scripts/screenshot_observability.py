"""The pictures of docs/observability.md: the "Background jobs" page's charts (last hour and
last day, light and dark theme) and a failed job's page with its tries' logs.

    .venv/bin/python scripts/screenshot_observability.py [--database URL] [--out docs/img]

Uses its own database (default ``jp_observe_shots`` on the local PostgreSQL; its job tables
are wiped), fills a day of the charts' rollup (``bench.lib.fill.rollup_day``) and a job
whose first try failed after logging, serves the project with ``manage.py runserver`` on a
free loopback port and takes the pictures in Debian's headless Chromium through
Playwright. Not a test: run it again when the page's look changes.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PASSWORD = "screenshots-only-password"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/jp_observe_shots")
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"))
    parser.add_argument("--per-minute", type=int, default=2400)
    args = parser.parse_args()
    os.environ["DEBUG"] = "true"  # runserver serves the admin's static files
    from bench.lib import project

    project.open_database(args.database, "jp_observe_shots")
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from bench.lib import fill

    call_command("migrate", verbosity=0)
    fill.wipe(["jobs_job", "jobs_attempt", "jobs_try_log"])
    fill.rollup_day(args.per_minute)
    job_id = _failed_job_with_logs()
    User.objects.filter(username="shots").delete()
    User.objects.create_superuser("shots", "shots@example.com", PASSWORD)

    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test", "DEBUG": "true"}
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(base)
        _shoot(base, job_id, Path(args.out))
    finally:
        server.terminate()
        server.wait(10)


def _failed_job_with_logs() -> int:
    """A job of the synthetic fleet whose first try failed after logging, and whose second
    succeeded: its page shows both tries' logs and the failed try's last lines."""
    from django.utils import timezone

    from jobs import store
    from jobs.models import Job, JobAttempt, Status, TryLog

    now = timezone.now()
    job = Job.objects.create(
        type="mail.send",
        queue="mail",
        status=Status.SUCCEEDED,
        payload={"message_id": 4711},
        attempts=2,
        max_attempts=3,
        started_at=now,
        finished_at=now,
        progress=100,
        locked_by="worker-a.1",
    )
    first = "\n".join(
        [
            f"{now:%Y-%m-%d %H:%M:%S},101 INFO mail.send: message 4711 to 3 recipients",
            f"{now:%Y-%m-%d %H:%M:%S},180 INFO mail.smtp: connected to smtp.example.net:587",
            f"{now:%Y-%m-%d %H:%M:%S},420 WARNING mail.smtp: 421 4.7.0 try again later",
        ]
    )
    second = "\n".join(
        [
            f"{now:%Y-%m-%d %H:%M:%S},951 INFO mail.send: message 4711 to 3 recipients",
            f"{now:%Y-%m-%d %H:%M:%S},990 INFO mail.smtp: connected to smtp.example.net:587",
            f"{now:%Y-%m-%d %H:%M:%S},998 INFO mail.send: accepted as <4711@example.net>",
        ]
    )
    TryLog.objects.create(job=job, attempt=1, text=first, lines=3)
    TryLog.objects.create(job=job, attempt=2, text=second, lines=3)
    JobAttempt.objects.create(
        job=job,
        type=job.type,
        attempt=1,
        worker="worker-a.1",
        started_at=now,
        error_class="smtplib.SMTPServerDisconnected",
        error="421 4.7.0 try again later",
        traceback='Traceback (most recent call last):\n  File "mail/send.py", line 42, in send\n'
        "smtplib.SMTPServerDisconnected: 421 4.7.0 try again later",
        outcome=Status.QUEUED,
    )
    del store  # the store is not needed: the rows above are what a worker would have written
    return job.pk


def _shoot(base: str, job_id: int, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu"],
        )
        for scheme in ("light", "dark"):
            context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
            page = context.new_page()
            page.goto(f"{base}/admin/login/?next=/admin/platform/job/")
            page.fill("#id_username", "shots")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_selector("#job-charts")
            box = page.locator(".job-charts-box")
            box.screenshot(path=str(out / f"observability-charts-hour-{scheme}.png"))
            page.click("label[for=job-chart-day]")
            box.screenshot(path=str(out / f"observability-charts-day-{scheme}.png"))
            if scheme == "light":
                page.goto(f"{base}/admin/platform/job/{job_id}/change/")
                page.locator("#job-attempts").screenshot(path=str(out / "observability-failed-try-log.png"))
                page.locator("#job-try-logs").screenshot(path=str(out / "observability-try-logs.png"))
            context.close()
        browser.close()
    print(f"pictures in {out}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/admin/login/", timeout=2)  # noqa: S310 - loopback
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("runserver did not come up")


if __name__ == "__main__":
    main()
