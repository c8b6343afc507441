"""What the benchmarks share.

Standard library and psycopg only, so the peers' harnesses import them in
bench/.peers-venv too: ``waiting``, ``stats``, ``processes``, ``postgres``, ``harness``.

The project's own (Django set up by ``project.setup`` first): ``engine`` (our workers and
what bench/throughput.py measures with them), ``fill`` (rows generated in bulk),
``emails`` (generated emails), ``admin`` (timing admin views), ``comparison`` (the peers'
virtualenv and the table of bench/compare.py).
"""
