"""``manage.py demo``: import the bundled sample emails, run a real worker until the queue
is drained, and print what became of each email."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

import jobs
from pipeline import blobs, job_types, semantic, switch
from pipeline.errors import IndexRefused, VectorIndexUnavailable
from pipeline.models import EmailMessage
from pipeline.sources import import_paths

DEMO_MAIL = Path(__file__).resolve().parents[2] / "demo_mail"
#: The seed's timers: `manage.py sweep`, `reconcile` and `trial_sweep`, now schedules.
DEMO_TIMERS = ("sweep", "reconcile", "trial_sweep")


def timer_line(timer: str) -> str:
    """``sweep        slot 16:50:00 UTC  job #9 succeeded   next 16:55:00 UTC`` (what ran last)."""
    last = jobs.timer_slots(timer).first()
    (coming,) = jobs.next_slots(timer)
    if last is None:
        ran = "no slot booked yet"
    else:
        run = f"job #{last.job.pk} {last.job.status}" if last.job else last.outcome
        ran = f"slot {last.slot:%H:%M:%S} UTC ({last.get_kind_display().lower()}): {run}"
    return f"{timer:<12} {ran:<52} next {coming:%H:%M:%S %Z}"


DEMO_QUERY = "parcel on its way"


class Command(BaseCommand):
    help = (
        "Import the sample emails in pipeline/demo_mail, process them with a real worker, print the outcome."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--concurrency", type=int, default=2, help="Child processes of the demo worker.")

    def handle(self, *args, **options) -> None:
        out = self.stdout
        # Their news is printed below instead.
        logging.getLogger("pipeline.import").setLevel(logging.ERROR)
        logging.getLogger("jobs.metrics").setLevel(logging.WARNING)
        switch.set_model_calls(True)
        out.write(
            f"Model calls: on ({settings.MODEL_PROVIDER} classifier). Blob storage: {settings.BLOB_STORAGE}."
        )
        out.write(
            f"\n1. Importing {DEMO_MAIL.relative_to(Path.cwd()) if DEMO_MAIL.is_relative_to(Path.cwd()) else DEMO_MAIL}"
        )
        counts = import_paths([str(DEMO_MAIL)])
        for problem in counts.problems:
            out.write(f"   unreadable: {problem}")
        out.write(
            f"   {counts.imported} imported, {counts.already_present} already present, {counts.unreadable} unreadable"
        )

        out.write(
            f"\n2. Running `manage.py runworker --burst --concurrency {options['concurrency']}` until the queue is empty"
        )
        log_path = Path(settings.VAR_DIR) / "demo-worker.log"
        took = jobs.run_burst_worker("--concurrency", str(options["concurrency"]), log_path=log_path)
        out.write(f"   worker finished in {took:.1f}s (log: {log_path})")

        out.write(
            "\n3. Timers: the worker booked their due slots and ran them itself, nothing else scheduled"
        )
        for timer in DEMO_TIMERS:
            out.write(f"   {timer_line(timer)}")

        out.write("\n4. Emails")
        self._summary()

        out.write("\n5. The email index: search by meaning (docs/email-index.md)")
        self._index()

    def _demo_emails(self):
        shas = [
            blobs.digest(path.read_bytes()) for path in sorted(DEMO_MAIL.glob("*.eml")) if path.stat().st_size
        ]
        return EmailMessage.objects.filter(sha256__in=shas).order_by("id")

    def _index(self) -> None:
        out = self.stdout
        state = semantic.state()
        out.write(f"   {state.model.description}, {state.model.dimensions} dimensions.")
        out.write(f"   {state.where}: collection {state.collection}, {state.points or 0} points.")
        try:
            out.write("   Nearest by meaning to each email (a copy shows its origin's):")
            for email in self._demo_emails():
                found = semantic.similar(email, limit=1)
                nearest = (
                    f"#{found[0].email.pk} {found[0].email.subject[:40]} ({found[0].score:.2f})"
                    if found
                    else "-"
                )
                out.write(f"   {email.pk:>3}  {(email.subject or '(no subject)')[:40]:<40} → {nearest}")
            out.write(f'   Search by meaning for "{DEMO_QUERY}" (words no demo email holds):')
            for hit in semantic.by_meaning(DEMO_QUERY, limit=3):
                out.write(f"   {hit.score:>5.2f}  #{hit.email.pk} {hit.email.subject[:60]}")
        except (VectorIndexUnavailable, IndexRefused) as exc:
            out.write(f"   The index cannot be read: {exc}")

    def _summary(self) -> None:
        emails = self._demo_emails().prefetch_related("attachments")
        latest_jobs = {
            email.pk: jobs.latest_job(job_types.PROCESS_EMAIL, email_id=email.pk) for email in emails
        }
        header = f"   {'#':>3}  {'file':<30} {'subject':<36} {'status':<18} {'labels':<17} job"
        self.stdout.write(header)
        self.stdout.write("   " + "-" * (len(header) - 3))
        for email in emails:
            job = latest_jobs[email.pk]
            job_text = f"#{job.pk} {job.status} (try {job.attempts}/{job.max_attempts})" if job else "-"
            if job and job.error:
                job_text += f": {job.error[:60]}"
            status = email.status + (f" of #{email.origin_id}" if email.origin_id else "")
            subject = (email.subject or "(no subject)")[:36]
            source = Path(email.source).name[:30]
            extras = []
            attachments = list(email.attachments.all())
            if attachments:
                converted = sum(1 for attachment in attachments if attachment.converted)
                extras.append(f"{converted}/{len(attachments)} attachments converted")
            defects = getattr(getattr(email, "parsed", None), "defects", [])
            if defects:
                extras.append(f"{len(defects)} defect(s): {defects[0][:50]}")
            labels = ", ".join(email.labels) or "-"
            self.stdout.write(
                f"   {email.pk:>3}  {source:<30} {subject:<36} {status:<18} {labels:<17} {job_text}"
            )
            for extra in extras:
                self.stdout.write(f"   {'':>3}  {'':<30} └ {extra}")
        statuses: dict[str, int] = {}
        for job in latest_jobs.values():
            if job is not None:
                statuses[job.status] = statuses.get(job.status, 0) + 1
        self.stdout.write(
            "\n   Jobs: "
            + ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
            + ". Browse them in the admin: `manage.py createsuperuser`, then `manage.py runserver` → /admin/."
        )
