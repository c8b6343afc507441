"""Our engine against Procrastinate, django-tasks-db and the bare-psycopg floor, in one sitting.

    .venv/bin/python bench/compare.py                      # everything: 5,000 jobs, 3 runs
    .venv/bin/python bench/compare.py --only ours --only procrastinate --jobs 1000 --runs 1

The same workload for every system, each run on its own database:

- drain: 5,000 no-op jobs enqueued in one transaction while 2 worker processes wait (ours:
  2 ``runworker`` at their defaults; Procrastinate: 2 workers x concurrency 4; django-tasks-db:
  2 ``db_worker``), jobs/s from the commit until every job is done;
- idle wake-up: one idle worker, 200 jobs enqueued one by one 20 ms apart, ms from the
  enqueue call to the job's start, p50 and p95;
- bulk enqueue: the library's bulk API on 5,000 jobs, jobs/s ("none" if it has none).

Every figure is the median of --runs runs (min–max). The runs go round-robin (round 1 runs
every system once, then round 2, ...) so that a burst of load on the shared machine hits all
systems alike. The floor is ``../shared/bench/limit_probe.py`` (``throughput JOBS 2 32`` and
``latency`` once per round); its throughput is timed from the start of its own processes, so
on 5,000 jobs that start-up weighs more than on its default 20,000 (``--floor-jobs``).
Ratios are what to quote: the machine is shared and noisy.

Procrastinate and django-tasks-db are installed from bench/requirements-peers.txt into
bench/.peers-venv (created with the project venv's base Python, refreshed when that file
changes); their harnesses (bench/peers/) run there, ours (bench/peers/ours_bench.py, which
calls bench/throughput.py's functions) in the project venv, with DATABASE_URL set to
COMPARE_DATABASE_URL (default ``postgres://postgres@127.0.0.1:5432/jp_compare``). Each harness runs in its own process group under a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS = BENCH / "peers"
PROJECT_PYTHON = ROOT / ".venv" / "bin" / "python"
PEERS_VENV = BENCH / ".peers-venv"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
REQUIREMENTS = BENCH / "requirements-peers.txt"
LIMIT_PROBE = Path(os.environ.get("LIMIT_PROBE", ROOT.parent / "shared" / "bench" / "limit_probe.py"))
OUR_DATABASE_URL = os.environ.get("COMPARE_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jp_compare")

SYSTEMS = ["ours", "procrastinate", "django-tasks-db", "floor"]
HARNESSES = {
    "ours": (PROJECT_PYTHON, "ours_bench.py"),
    "procrastinate": (PEERS_PYTHON, "procrastinate_bench.py"),
    "django-tasks-db": (PEERS_PYTHON, "django_tasks_db_bench.py"),
}


# --- the peers' virtualenv ---------------------------------------------------------------


def peers_venv() -> None:
    """Create bench/.peers-venv if missing and install requirements-peers.txt when it changed."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    stamp = PEERS_VENV / "requirements.sha256"
    if PEERS_PYTHON.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return
    if not PEERS_PYTHON.exists():
        base = subprocess.run(
            [str(PROJECT_PYTHON), "-c", "import sys; print(sys._base_executable)"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        log(f"creating {PEERS_VENV.relative_to(ROOT)} with {base}")
        subprocess.run([base, "-m", "venv", str(PEERS_VENV)], check=True, timeout=300)
    log(f"installing {REQUIREMENTS.relative_to(ROOT)} into {PEERS_VENV.relative_to(ROOT)}")
    installed = subprocess.run(
        [str(PEERS_PYTHON), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if installed.returncode != 0:
        raise SystemExit(f"pip install -r {REQUIREMENTS} failed:\n{installed.stdout}{installed.stderr}")
    stamp.write_text(digest + "\n")


# --- running things under a deadline ------------------------------------------------------


def log(message: str) -> None:
    print(f"[compare {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(command: list[str], timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in its own process group; its stderr passes through, stdout is returned.

    Past ``timeout`` seconds, or on Ctrl-C, the whole group gets SIGTERM, then SIGKILL.
    """
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except BaseException:
        stop_group(process)
        raise
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}:\n{output}")
    return output


def stop_group(process: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM the group, give the leader ``grace`` seconds, then SIGKILL what is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=10)


def harness(system: str, args: argparse.Namespace) -> dict:
    """One run of a system's harness (``--runs 1``)."""
    python, script = HARNESSES[system]
    env = {**os.environ}
    if system == "ours":
        env["DATABASE_URL"] = OUR_DATABASE_URL
    command = [str(python), str(PEERS / script), "--runs", "1", "--jobs", str(args.jobs)]
    command += ["--samples", str(args.samples)]
    log(f"{system}: {' '.join(command[1:])}")
    output = run(command, args.timeout, env)
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    raise RuntimeError(f"{system}: no RESULT line in its output:\n{output}")


def floor(args: argparse.Namespace) -> dict:
    """One run of limit_probe.py: ``throughput JOBS 2 32``, then ``latency``."""
    if not LIMIT_PROBE.exists():
        raise RuntimeError(f"{LIMIT_PROBE} not found (set LIMIT_PROBE)")
    jobs = str(args.floor_jobs or args.jobs)
    log(f"floor: limit_probe.py throughput {jobs} 2 32, then latency")
    output = run([str(PEERS_PYTHON), str(LIMIT_PROBE), "throughput", jobs, "2", "32"], args.timeout)
    match = re.search(r"throughput: ([\d.]+) jobs/s", output)
    if not match:
        raise RuntimeError(f"limit_probe throughput: unexpected output {output!r}")
    drain = float(match.group(1))
    output = run([str(PEERS_PYTHON), str(LIMIT_PROBE), "latency"], args.timeout)
    match = re.search(r"latency: p50 ([\d.]+) ms, p95 ([\d.]+) ms", output)
    if not match:
        raise RuntimeError(f"limit_probe latency: unexpected output {output!r}")
    p50, p95 = float(match.group(1)), float(match.group(2))
    print(f"floor run: drain {drain:,.0f} jobs/s, wake-up p50 {p50:.2f} ms p95 {p95:.2f} ms", file=sys.stderr)
    return {
        "system": "floor",
        "version": "limit_probe.py",
        "drain": [drain],
        "p50": [p50],
        "p95": [p95],
        "bulk": None,
        "setup": f"bare psycopg, 2 supervisors x 2 children, claim 32 / ack 32, throughput on {jobs} jobs "
        "timed from the start of its processes",
    }


def merge(into: dict, result: dict) -> None:
    """Add one run's figures to a system's lists (``bulk`` stays None for a system without one)."""
    for key in ("drain", "p50", "p95", "bulk"):
        into[key] = None if result[key] is None else [*(into.get(key) or []), *result[key]]
    for key in ("system", "version", "setup"):
        into[key] = result[key]


# --- the table ----------------------------------------------------------------------------


def median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def spread(values: list[float] | None) -> str:
    if not values:
        return "none"
    return f"{median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def label(result: dict) -> str:
    if result["system"] == "floor":
        return "floor (limit_probe)"
    if result["system"] == "ours":
        return f"ours ({result['version']})" if result["version"] else "ours"
    return f"{result['system']} {result['version']}"


def ratio(ours: float | None, other: float | None, digits: int = 2) -> str:
    if ours is None or other is None or other == 0:
        return "–"
    return f"{ours / other:.{digits}f}"


def table(results: dict[str, dict], args: argparse.Namespace, started: datetime, finished: datetime) -> str:
    lines = [
        f"{args.jobs:,} no-op jobs, median of {args.runs} (min–max); {os.cpu_count()} cores; "
        f"run {started:%Y-%m-%d %H:%M}–{finished:%H:%M} UTC",
        "",
    ]
    header = (
        f"{'system':<26} {'drain jobs/s':>24}   {'wake-up p50 / p95 ms':>20}   {'bulk enqueue jobs/s':>26}"
    )
    lines += [header, "-" * len(header)]
    for system in SYSTEMS:
        if system not in results:
            continue
        result = results[system]
        wake = f"{ms(median(result['p50']))} / {ms(median(result['p95']))}"
        bulk = "–" if system == "floor" else spread(result["bulk"])
        lines.append(f"{label(result):<26} {spread(result['drain']):>24}   {wake:>20}   {bulk:>26}")
    lines.append("")
    for system in SYSTEMS:
        if system in results:
            lines.append(f"  {system}: {results[system]['setup']}")
    ours = results.get("ours")
    others = [system for system in SYSTEMS if system != "ours" and system in results]
    if ours and others:
        lines += [
            "",
            "ratios ours / other (drain, bulk: above 1 = ours faster; wake-up: below 1 = ours starts sooner)",
            f"{'':<26} {'drain':>8} {'wake p50':>9} {'wake p95':>9} {'bulk':>8}",
        ]
        for system in others:
            other = results[system]
            lines.append(
                f"{'ours / ' + system:<26} "
                f"{ratio(median(ours['drain']), median(other['drain'])):>8} "
                f"{ratio(median(ours['p50']), median(other['p50']), 3):>9} "
                f"{ratio(median(ours['p95']), median(other['p95']), 3):>9} "
                f"{ratio(median(ours['bulk']), median(other['bulk'])):>8}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5000, help="jobs per drain and per bulk enqueue")
    parser.add_argument(
        "--floor-jobs",
        type=int,
        help="jobs per limit_probe throughput run (default --jobs; its time includes starting its processes)",
    )
    parser.add_argument("--only", action="append", choices=SYSTEMS, help="run only this part (repeatable)")
    parser.add_argument("--samples", type=int, default=200, help="wake-up samples per run (peers and ours)")
    parser.add_argument(
        "--timeout", type=float, help="deadline per harness run in seconds (default: from --jobs)"
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    if args.timeout is None:
        args.timeout = max(300, args.jobs / 10)
    wanted = [system for system in SYSTEMS if system in (args.only or SYSTEMS)]

    if any(system != "ours" for system in wanted):
        peers_venv()
    started = datetime.now(UTC)
    log(f"load average at start: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    results: dict[str, dict] = {}
    failures: dict[str, str] = {}
    for number in range(args.runs):  # round-robin, so that each round sees the same noise
        log(f"round {number + 1} of {args.runs}")
        for system in wanted:
            if system in failures:
                continue
            try:
                merge(
                    results.setdefault(system, {}),
                    floor(args) if system == "floor" else harness(system, args),
                )
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
                failures[system] = str(error)
                results.pop(system, None)
                log(f"{system} FAILED: {error}")
    finished = datetime.now(UTC)
    log(f"load average at end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print()
    print(table(results, args, started, finished))
    if args.json:
        args.json.write_text(
            json.dumps({"started": started.isoformat(), "results": results}, indent=2) + "\n"
        )
    if failures:
        print("\nfailed:\n  " + "\n  ".join(f"{system}: {error}" for system, error in failures.items()))
        sys.exit(1)


if __name__ == "__main__":
    main()
