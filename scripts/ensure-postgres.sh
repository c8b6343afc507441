#!/usr/bin/env bash
# Start the local PostgreSQL cluster when it is not answering, then make sure the
# project's database exists. Used by `make test` and `make bench`.
set -euo pipefail
host=${PGHOST:-127.0.0.1}
port=${PGPORT:-5432}
user=${PGUSER:-postgres}
db=${PGDATABASE_NAME:-jobplatform}

if ! pg_isready -q -h "$host" -p "$port"; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    echo "Starting PostgreSQL $version…"
    # In a session of its own (setsid): the server outlives whatever started it.
    setsid pg_ctlcluster --skip-systemctl-redirect "$version" main start </dev/null
  else
    echo "PostgreSQL is not running at $host:$port and no local cluster was found to start." >&2
    exit 1
  fi
  for _ in $(seq 1 30); do pg_isready -q -h "$host" -p "$port" && break; sleep 0.5; done
fi
pg_isready -q -h "$host" -p "$port" || { echo "PostgreSQL did not come up at $host:$port." >&2; exit 1; }
if ! psql -h "$host" -p "$port" -U "$user" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  psql -h "$host" -p "$port" -U "$user" -d postgres -qc "CREATE DATABASE $db"
fi
