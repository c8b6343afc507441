"""Throughput and memory of the email pipeline: import and process --emails generated emails
(mixed sizes, 10 % duplicates) with --workers real ``manage.py runworker`` processes on
PostgreSQL and the local classifier.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_pipeline_bench .venv/bin/python bench/pipeline.py

Reports the import rate, the processing rate (emails/s from the workers' start to the last
job), the peak memory of the worker processes (each supervisor and every process under it:
forkserver and children, VmRSS sampled, VmHWM at the end) and whether the workers' memory
stayed flat: the total RSS late in the run may not exceed the total after warm-up by more
than 20 %. The pipeline and job tables are wiped first: use a database of your own.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from email.message import EmailMessage as MimeMessage
from email.policy import SMTP
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jp_pipeline_bench")
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="pipeline-bench-"))
os.environ.update({"MODEL_PROVIDER": "local", "BLOB_STORAGE": "local", "MODEL_CALLS_DEFAULT": "true"})

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import InterfaceError, OperationalError, connection  # noqa: E402
from django.db.models import Count  # noqa: E402

from jobs.models import Job  # noqa: E402
from pipeline import intake  # noqa: E402
from pipeline.models import EmailMessage  # noqa: E402
from tests.pipeline.corpus import minimal_pdf  # noqa: E402

GROWTH_LIMIT = 0.20
WORDS = [
    "invoice",
    "payment",
    "meeting",
    "agenda",
    "report",
    "quarterly",
    "budget",
    "shipment",
    "tracking",
    "help",
    "error",
    "newsletter",
    "unsubscribe",
    "project",
    "status",
    "update",
    "customer",
    "order",
    "delivery",
    "schedule",
    "review",
]


def _text(rng: random.Random, size: int) -> str:
    words, total = [], 0
    while total < size:
        word = rng.choice(WORDS)
        words.append(word)
        total += len(word) + 1
    return " ".join(words)


def generate(count: int, seed: int = 7) -> list[bytes]:
    """``count`` emails: 75 % small plain, 15 % HTML, 8 % with a PDF, 2 % with a 100-500 KB
    binary; every tenth is a second delivery of an earlier one (same Message-ID)."""
    rng = random.Random(seed)
    pdf = minimal_pdf("Quarterly revenue grew strongly")
    emails: list[bytes] = []
    for number in range(count):
        if number % 10 == 9 and emails:
            original = emails[rng.randrange(len(emails))]
            emails.append(f"Received: from relay{number}.example.net; bench\r\n".encode() + original)
            continue
        msg = MimeMessage()
        msg["From"] = f"sender{number % 500}@example.com"
        msg["To"] = "inbox@example.org"
        msg["Subject"] = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} #{number}"
        msg["Message-ID"] = f"<bench-{number}@example.com>"
        kind = rng.random()
        if kind < 0.75:
            msg.set_content(_text(rng, rng.randint(500, 4000)))
        elif kind < 0.90:
            paragraphs = "".join(f"<p>{_text(rng, 400)}</p>" for _ in range(rng.randint(20, 60)))
            msg.set_content(f"<html><body>{paragraphs}</body></html>", subtype="html")
        elif kind < 0.98:
            msg.set_content(_text(rng, 1000))
            msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="report.pdf")
            msg.add_attachment(_text(rng, 20_000), filename="notes.txt")
        else:
            msg.set_content(_text(rng, 500))
            blob = rng.randbytes(rng.randint(100_000, 500_000))
            msg.add_attachment(blob, maintype="application", subtype="octet-stream", filename="data.bin")
        emails.append(msg.as_bytes(policy=SMTP))
    return emails


def wipe() -> None:
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE pipeline_emailmessage, pipeline_origin, pipeline_pipelinerun, pipeline_parsedemail, "
            "pipeline_attachment, pipeline_classification, pipeline_indexrecord, pipeline_errorlogentry, "
            "pipeline_modelcallswitch, jobs_job, jobs_attempt, jobs_worker RESTART IDENTITY CASCADE"
        )


# --- memory sampling ----------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _tree(root: int, children: dict[int, list[int]]) -> list[int]:
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class MemorySampler(threading.Thread):
    def __init__(self, roots: list[int], total: int) -> None:
        super().__init__(daemon=True)
        self.roots, self.total = roots, total
        self.samples: list[tuple[float, int]] = []  # (fraction done, total RSS kB)
        self.hwm: dict[int, int] = {}
        self.stop = threading.Event()
        self.done = 0

    def run(self) -> None:
        from django.db import connections

        while not self.stop.wait(0.5):
            try:
                done = finished_jobs()
            except OperationalError:  # PostgreSQL restarted under us (a shared machine)
                connections.close_all()
                continue
            self.done = done
            pids = [pid for root in self.roots for pid in _tree(root, _children_map())]
            rss = sum(_status_kb(pid, "VmRSS") for pid in pids)
            for pid in pids:
                self.hwm[pid] = max(self.hwm.get(pid, 0), _status_kb(pid, "VmHWM"))
            if rss:
                self.samples.append((done / self.total, rss))
        connections.close_all()


def finished_jobs() -> int:
    return Job.objects.filter(type="email.process", status__in=["succeeded", "failed", "cancelled"]).count()


def retrying(func, *args, **kwargs):
    """Call ``func``, reconnecting while PostgreSQL restarts (other test runs share it)."""
    for delay in (0.5, 1, 2, 4, 8, 16, 30):
        try:
            return func(*args, **kwargs)
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(delay)
    return func(*args, **kwargs)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--emails", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="runworker processes, one child each")
    args = parser.parse_args()

    wipe()
    print(f"Generating {args.emails} emails…", flush=True)
    emails = generate(args.emails)
    megabytes = sum(map(len, emails)) / 1e6
    print(f"  {megabytes:.0f} MB in total, largest {max(map(len, emails)) / 1e3:.0f} kB")

    started = time.monotonic()
    created = sum(retrying(intake.receive, raw, source="bench").created for raw in emails)
    import_seconds = time.monotonic() - started
    print(f"Imported {created} emails in {import_seconds:.1f}s ({created / import_seconds:.0f} emails/s)")

    env = {**os.environ, "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING")}
    log = open(Path(os.environ["VAR_DIR"]) / "workers.log", "w")  # noqa: SIM115
    started = time.monotonic()
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "runworker",
                "--queue",
                "mail:1",
                "--name",
                f"bench-{n}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for n in range(args.workers)
    ]
    sampler = MemorySampler([worker.pid for worker in workers], created)
    sampler.start()
    # Not --burst: a job retried after a database restart is due 30 s later, and a burst
    # worker would leave before it. Stop the workers once every job has finished.
    while sampler.done < created and all(worker.poll() is None for worker in workers):
        time.sleep(0.2)
    process_seconds = time.monotonic() - started
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    codes = [worker.wait(timeout=60) for worker in workers]
    sampler.stop.set()
    sampler.join()

    statuses = retrying(lambda: dict(EmailMessage.objects.values_list("status").annotate(n=Count("id"))))
    jobs = retrying(
        lambda: dict(Job.objects.filter(type="email.process").values_list("status").annotate(n=Count("id")))
    )
    retried = retrying(lambda: Job.objects.filter(type="email.process", attempts__gt=1).count())
    print(
        f"Processed {created} emails with {args.workers} workers in {process_seconds:.1f}s: "
        f"{created / process_seconds:.1f} emails/s (exit codes {codes})"
    )
    print(f"  email statuses: {statuses}")
    print(f"  job statuses:   {jobs} ({retried} needed more than one try)")

    warm = [rss for done, rss in sampler.samples if 0.10 <= done <= 0.25]
    late = [rss for done, rss in sampler.samples if done >= 0.80]
    peak = max(rss for _, rss in sampler.samples)
    print(f"Worker memory (supervisors + forkservers + children, {len(sampler.hwm)} processes):")
    print(
        f"  peak total RSS {peak / 1024:.0f} MB; peak VmHWM per process (MB): "
        + ", ".join(f"{kb / 1024:.0f}" for kb in sorted(sampler.hwm.values(), reverse=True))
    )
    ok = statuses.get("labelled", 0) + statuses.get("duplicate", 0) == created and jobs == {
        "succeeded": created
    }
    if warm and late:
        baseline, final = statistics.median(warm), max(late)
        growth = final / baseline - 1
        flat = growth <= GROWTH_LIMIT
        print(
            f"  total RSS after warm-up {baseline / 1024:.0f} MB, late in the run at most {final / 1024:.0f} MB: "
            f"growth {growth:+.1%} ({'flat' if flat else 'NOT flat'}, limit {GROWTH_LIMIT:.0%})"
        )
        ok = ok and flat
    else:
        print("  too few samples to judge flatness")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
