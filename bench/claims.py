"""The cost of one claim, plain and under flow limits, in one process without workers.

    .venv/bin/python -m bench.claims
    .venv/bin/python -m bench.claims --database mysql://root@127.0.0.1:3306/jp_bench

Uses the database in DATABASE_URL (default ``jp_bench`` on the local PostgreSQL, created if
missing) or the one given with --database (MariaDB too). Its job tables are wiped: use a
database of your own.

Queues --jobs no-op jobs, then claims them --batch at a time as a worker's supervisor does
(the plain claim: ``store.claim``; under limits: ``FlowControl.claim`` of the keyed jobs of
``default``, for ``test.noop_limited``, whose limits, a concurrency of 100,000 and
100,000 starts a second, no claim reaches, without leases; ``leased``: the same with
leases, taken as a worker takes them, ``jobs.flow.leases``) and acknowledges each batch before the next, so
the running jobs stay few. It prints the median milliseconds of a claim, of its
acknowledgement (``store.complete``) and, for the claim under limits, of each step of its
rounds: what the database does (``take`` or
``candidates``, ``finish``) and what the admission costs in Python (``admit``). A drain
(``bench.throughput --only limits``) measures the same with workers; this shows where a
claim's time goes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from bench.lib import project

PARTS = ("plain", "limited", "leased")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", help="postgres://… or mysql://… (default: DATABASE_URL or jp_bench)")
    parser.add_argument("--jobs", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    project.open_database(args.database, "jp_bench")

    from django.db import connection

    from bench.lib import engine
    from jobs.drivers import driver

    driver().prepare_supervisor_session(connection)  # as a supervisor's session: async commit
    version = ".".join(str(part) for part in connection.get_database_version())
    print(f"{connection.display_name} {version}; {args.jobs:,} jobs, {args.batch} a claim")
    for _ in range(args.runs):
        for part in PARTS:
            type_name = engine.NOOP if part == "plain" else engine.NOOP_LIMITED
            claims, acks, steps = drain(type_name, args.jobs, args.batch, part=part)
            said = ", ".join(f"{name} {statistics.median(times) * 1000:.2f}" for name, times in steps.items())
            print(
                f"{part:8s} claim {statistics.median(claims) * 1000:.2f} ms"
                + (f" ({said} ms)" if said else "")
                + f", acknowledgement {statistics.median(acks) * 1000:.2f} ms"
            )


def drain(
    type_name: str, count: int, batch: int, *, part: str
) -> tuple[list[float], list[float], dict[str, list[float]]]:
    """Claim ``count`` queued jobs of ``type_name`` ``batch`` at a time (``part``: which
    claim, see the module's docstring): each claim's seconds, each acknowledgement's (of
    the batch, as succeeded), and each step's of a round under limits."""
    from django.db import transaction

    import jobs
    from bench.lib import engine
    from jobs import store
    from jobs.drivers import driver
    from jobs.flow import admission
    from jobs.worker.flow import FlowControl

    engine.reset()
    with transaction.atomic():
        jobs.enqueue_many(type_name, ({} for _ in range(count)))
    steps: dict[str, list[float]] = defaultdict(list)
    flow = FlowControl(1.0)
    if part == "limited":
        flow.lease_most = 0
    claims: list[float] = []
    acks: list[float] = []
    with (
        _timed(steps, type(_round_of(driver())), ("take", "candidates", "finish")),
        _timed(steps, admission, ("admit",)),
    ):
        while True:
            began = time.perf_counter()
            held = flow.usable_leases() if part == "leased" else []
            if held:
                got = flow.claim_leased("bench", ["default"], held[0], batch)
                if len(got) < batch:
                    got += flow.claim("bench", ["default"], batch - len(got), True, None).jobs
            elif part != "plain":
                got = flow.claim("bench", ["default"], batch, True, None).jobs
            else:
                got = store.claim("bench", ["default"], batch)
            claims.append(time.perf_counter() - began)
            if not got:
                break
            began = time.perf_counter()
            store.complete("bench", [(job.id, job.attempt) for job in got])
            acks.append(time.perf_counter() - began)
    return claims[:-1] or claims, acks, dict(steps)


def _round_of(drv: Any) -> Any:
    with drv.flow_transaction() as round_:
        return round_


class _timed:
    """Time each call of ``names`` on ``owner`` (a class or a module) while inside."""

    def __init__(self, found: dict[str, list[float]], owner: Any, names: tuple[str, ...]) -> None:
        self.found, self.owner, self.names = found, owner, names
        self.saved: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> None:
        for name in self.names:
            if not hasattr(self.owner, name):
                continue
            original = self.saved[name] = getattr(self.owner, name)
            setattr(self.owner, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        found = self.found

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                found[name].append(time.perf_counter() - began)

        return timed

    def __exit__(self, *exc: object) -> None:
        for name, original in self.saved.items():
            setattr(self.owner, name, original)


if __name__ == "__main__":
    main()
