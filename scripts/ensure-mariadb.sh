#!/usr/bin/env bash
# MariaDB for the suite's second pass: install the server and the client library's build
# dependencies (mysqlclient compiles against libmariadb) when missing, start the server when
# it is not answering, and create the project's database. Used by `make test`.
set -euo pipefail
host=${MARIADB_HOST:-127.0.0.1}
port=${MARIADB_PORT:-3306}
db=${MARIADB_DATABASE_NAME:-jobplatform}

apt_install() {
  echo "Installing $*…"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pkg-config --exists libmariadb 2>/dev/null || apt_install libmariadb-dev pkg-config gcc
command -v mariadb-admin >/dev/null 2>&1 || command -v mysqladmin >/dev/null 2>&1 || apt_install mariadb-server
admin=$(command -v mariadb-admin || command -v mysqladmin)
client=$(command -v mariadb || command -v mysql)

if ! "$admin" --host="$host" --port="$port" --user=root ping >/dev/null 2>&1; then
  echo "Starting MariaDB…"
  # In a session of its own (setsid), so that the server outlives whatever started it (a
  # terminal, a CI step whose process group is cleaned up). Debian's init script may say it
  # failed while the server still comes up: the ping below decides.
  if command -v service >/dev/null 2>&1 && [ -x /etc/init.d/mariadb ]; then
    setsid service mariadb start >/dev/null 2>&1 </dev/null || echo "service mariadb start reported a failure; waiting for the server anyway." >&2
  else
    (setsid mysqld_safe >/dev/null 2>&1 </dev/null &)
  fi
  for _ in $(seq 1 60); do "$admin" --host="$host" --port="$port" --user=root ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
"$admin" --host="$host" --port="$port" --user=root ping >/dev/null 2>&1 \
  || { echo "MariaDB did not come up at $host:$port." >&2; exit 1; }
"$client" --host="$host" --port="$port" --user=root -e \
  "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
