"""Each system's harness for bench/compare.py: ours in the project venv, the peers in
bench/.peers-venv (standard library, psycopg and ``bench.lib``'s psycopg-only modules)."""
