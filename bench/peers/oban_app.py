"""The oban-py workers of bench/peers/oban_bench.py, in their own module so that the
workers (``oban start``, which imports a job's worker class by its dotted name) and the
harness import the same thing. ``async def process``, as oban-py's documentation writes
them (it runs them on its asyncio loop)."""

from oban import worker

from bench.lib.harness import stamp
from bench.lib.postgres import peer_database

DATABASE = peer_database("bench_oban")


@worker(queue="default")
class Noop:
    async def process(self, job) -> None:
        return None


@worker(queue="default")
class Stamp:
    async def process(self, job) -> None:
        stamp(job.args["path"], job.args["t0"])
