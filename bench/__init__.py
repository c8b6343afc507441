"""The platform's benchmarks. Run each from the project root as a module, e.g.
``.venv/bin/python -m bench.throughput``; what they share is in ``bench.lib``."""
