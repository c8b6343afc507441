"""The Procrastinate app and tasks of bench/peers/procrastinate_bench.py, in their own module
so that the workers (``procrastinate --app bench.peers.procrastinate_app.app worker``) and the harness
import the same thing.

Plain ``def`` tasks, as in a Django project (Procrastinate runs them in a thread);
PROCRASTINATE_BENCH_ASYNC=1 makes them ``async def``.
"""

import os

import procrastinate

from bench.lib.harness import stamp
from bench.lib.postgres import dsn, peer_database

DATABASE = peer_database("bench_procrastinate")
ASYNC = os.environ.get("PROCRASTINATE_BENCH_ASYNC") == "1"

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=dsn(DATABASE, "procrastinate-bench"))
)

if ASYNC:

    @app.task(name="noop")
    async def noop() -> None:
        pass

    @app.task(name="stamp")
    async def stamp_task(path: str, t0: float) -> None:
        stamp(path, t0)

else:

    @app.task(name="noop")
    def noop() -> None:
        pass

    @app.task(name="stamp")
    def stamp_task(path: str, t0: float) -> None:
        stamp(path, t0)
