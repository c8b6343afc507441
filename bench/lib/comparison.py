"""bench/compare.py's machinery: the peers' virtualenv, running each system's harness in
its own process group under a deadline, and the table of figures and ratios.

Standard library only (the harnesses' output is JSON), run in the project venv.
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
from datetime import datetime
from pathlib import Path

from bench.lib.harness import parse_result
from bench.lib.project import ROOT

BENCH = ROOT / "bench"
PROJECT_PYTHON = ROOT / ".venv" / "bin" / "python"
PEERS_VENV = BENCH / ".peers-venv"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
REQUIREMENTS = BENCH / "requirements-peers.txt"
LIMIT_PROBE = Path(os.environ.get("LIMIT_PROBE", ROOT.parent / "shared" / "bench" / "limit_probe.py"))
OUR_DATABASE_URL = os.environ.get("COMPARE_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/jp_compare")

SYSTEMS = ["ours", "ours-tasks", "oban-py", "procrastinate", "django-tasks-db", "floor"]
OURS = {"ours", "ours-tasks"}  # run in the project venv; the others in bench/.peers-venv
# Like-for-like pairs quoted besides "ours / every other": the same API on both sides.
PAIRS = [("ours-tasks", "django-tasks-db")]
# Each harness runs as a module from the project root, in its own venv.
HARNESSES = {
    "ours": (PROJECT_PYTHON, "bench.peers.ours_bench"),
    "ours-tasks": (PROJECT_PYTHON, "bench.peers.ours_tasks_bench"),
    "oban-py": (PEERS_PYTHON, "bench.peers.oban_bench"),
    "procrastinate": (PEERS_PYTHON, "bench.peers.procrastinate_bench"),
    "django-tasks-db": (PEERS_PYTHON, "bench.peers.django_tasks_db_bench"),
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
    python, module = HARNESSES[system]
    env = {**os.environ}
    if system in OURS:
        env["DATABASE_URL"] = OUR_DATABASE_URL
    command = [str(python), "-m", module, "--runs", "1", "--jobs", str(args.jobs)]
    command += ["--samples", str(args.samples)]
    log(f"{system}: {' '.join(command[1:])}")
    output = run(command, args.timeout, env)
    result = parse_result(output)
    if result is None:
        raise RuntimeError(f"{system}: no RESULT line in its output:\n{output}")
    return result


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


#: The figures of a run: drain (steady), p50 / p95 (idle wake-up), bulk and single
#: (enqueue), cold (drain including start-up), startup (launch to first job, s).
FIGURES = ("drain", "p50", "p95", "bulk", "cold", "startup", "single")


def merge(into: dict, result: dict) -> None:
    """Add one run's figures to a system's lists (None stays for a figure a system lacks)."""
    for key in FIGURES:
        value = result.get(key)
        into[key] = None if value is None else [*(into.get(key) or []), *value]
    for key in ("system", "version", "setup"):
        into[key] = result[key]


def run_rounds(wanted: list[str], args: argparse.Namespace) -> tuple[dict[str, dict], dict[str, str]]:
    """``args.runs`` rounds of one run per system, round-robin so that each round sees the
    same noise; the figures per system, and the error of each system that failed (it is
    left out of later rounds)."""
    results: dict[str, dict] = {}
    failures: dict[str, str] = {}
    for number in range(args.runs):
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
    return results, failures


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
    if result["system"] in OURS:
        name = "ours via django.tasks" if result["system"] == "ours-tasks" else "ours"
        return f"{name} ({result['version']})" if result["version"] else name
    return f"{result['system']} {result['version']}"


def ratio(ours: float | None, other: float | None, digits: int = 2) -> str:
    if ours is None or other is None or other == 0:
        return "–"
    return f"{ours / other:.{digits}f}"


def seconds(values: list[float] | None) -> str:
    if not values:
        return "–"
    return f"{median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def table(results: dict[str, dict], args: argparse.Namespace, started: datetime, finished: datetime) -> str:
    lines = [
        f"{args.jobs:,} no-op jobs, median of {args.runs} (min–max); {os.cpu_count()} cores; "
        f"run {started:%Y-%m-%d %H:%M}–{finished:%H:%M} UTC",
        "",
    ]
    header = (
        f"{'system':<30} {'steady drain jobs/s':>22} {'drain incl. start-up':>22} {'start-up s':>18}"
        f"   {'wake-up p50 / p95 ms':>20}   {'enqueue 1 by 1 / bulk jobs/s':>30}"
    )
    lines += [header, "-" * len(header)]
    for system in SYSTEMS:
        if system not in results:
            continue
        result = results[system]
        wake = f"{ms(median(result['p50']))} / {ms(median(result['p95']))}"
        single = median(result.get("single"))
        enqueue = f"{'–' if single is None else f'{single:,.0f}'} / {'–' if system == 'floor' else spread(result['bulk'])}"
        cold = spread(result.get("cold")) if result.get("cold") else "–"
        lines.append(
            f"{label(result):<30} {spread(result['drain']):>22} {cold:>22} {seconds(result.get('startup')):>18}"
            f"   {wake:>20}   {enqueue:>30}"
        )
    lines.append("")
    for system in SYSTEMS:
        if system in results:
            lines.append(f"  {system}: {results[system]['setup']}")
    pairs = [("ours", system) for system in SYSTEMS if system not in OURS] + PAIRS
    pairs = [(mine, other) for mine, other in pairs if mine in results and other in results]
    if pairs:
        lines += [
            "",
            "ratios ours / other (drain, enqueue: above 1 = ours faster; start-up, wake-up: below 1 = ours sooner)",
            f"{'':<34} {'drain':>8} {'incl. start':>12} {'start-up':>9} {'wake p50':>9} {'wake p95':>9} {'1 by 1':>8} {'bulk':>8}",
        ]
        for mine, system in pairs:
            ours, other = results[mine], results[system]
            lines.append(
                f"{mine + ' / ' + system:<34} "
                f"{ratio(median(ours['drain']), median(other['drain'])):>8} "
                f"{ratio(median(ours.get('cold')), median(other.get('cold'))):>12} "
                f"{ratio(median(ours.get('startup')), median(other.get('startup')), 3):>9} "
                f"{ratio(median(ours['p50']), median(other['p50']), 3):>9} "
                f"{ratio(median(ours['p95']), median(other['p95']), 3):>9} "
                f"{ratio(median(ours.get('single')), median(other.get('single'))):>8} "
                f"{ratio(median(ours['bulk']), median(other['bulk'])):>8}"
            )
    return "\n".join(lines)
