"""Throughput and memory of the email pipeline: import and process --emails generated emails
(mixed sizes, 10 % duplicates) with --workers real ``manage.py runworker`` processes on
PostgreSQL and the local classifier, full-text index only (``VECTOR_INDEX=true`` adds the
vectors in Qdrant's local mode, which ``bench.index`` measures on its own).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_pipeline_bench .venv/bin/python -m bench.pipeline

Reports the import rate, the processing rate (emails/s from the workers' start to the last
job), the peak memory of the worker processes (each supervisor and every process under it:
forkserver and children, VmRSS sampled, VmHWM at the end) and whether the workers' memory
stayed flat: the total RSS late in the run may not exceed the total after warm-up by more
than 20 %. The pipeline and job tables are wiped first: use a database of your own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.lib import project
from bench.lib.processes import MemorySampler, Pool
from bench.lib.project import ROOT, retrying

GROWTH_LIMIT = 0.20


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--emails", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="runworker processes, one child each")
    args = parser.parse_args()

    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="pipeline-bench-"))
    os.environ.update({"MODEL_PROVIDER": "local", "BLOB_STORAGE": "local", "MODEL_CALLS_DEFAULT": "true"})
    # The engine and the pipeline, without the vector index: Qdrant's local mode is not made
    # for 10,000 emails (a turn opens the folder; python -m bench.index measures it).
    os.environ.setdefault("VECTOR_INDEX", "false")
    project.setup("jp_pipeline_bench", settings="config.settings")
    from django.db.models import Count

    from bench.lib import emails
    from jobs.models import Job
    from pipeline import intake
    from pipeline.models import EmailMessage

    emails.wipe()
    print(f"Generating {args.emails} emails…", flush=True)
    generated = emails.generate(args.emails)
    megabytes = sum(map(len, generated)) / 1e6
    print(f"  {megabytes:.0f} MB in total, largest {max(map(len, generated)) / 1e3:.0f} kB")

    started = time.monotonic()
    created = sum(retrying(intake.receive, raw, source="bench").created for raw in generated)
    import_seconds = time.monotonic() - started
    print(f"Imported {created} emails in {import_seconds:.1f}s ({created / import_seconds:.0f} emails/s)")

    def finished_jobs() -> int:
        return retrying(
            lambda: Job.objects.filter(
                type="email.process", status__in=["succeeded", "failed", "cancelled"]
            ).count()
        )

    env = {**os.environ, "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING")}
    command = [sys.executable, "manage.py", "runworker", "--queue", "mail:1"]
    started = time.monotonic()
    with open(Path(os.environ["VAR_DIR"]) / "workers.log", "w") as log:
        workers = Pool([[*command, "--name", f"bench-{n}"] for n in range(args.workers)], ROOT, env, log)
        sampler = MemorySampler(workers.pids(), finished_jobs, created)
        sampler.start()
        # Not --burst: a job retried after a database restart is due 30 s later, and a burst
        # worker would leave before it. Stop the workers once every job has finished.
        while sampler.done < created and all(process.poll() is None for process in workers.processes):
            time.sleep(0.2)
        process_seconds = time.monotonic() - started
        codes = workers.stop(grace=60)
        sampler.stop()

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
