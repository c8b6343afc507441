"""The benchmarks' own database on a local MariaDB, through mysqlclient alone."""

from __future__ import annotations

from urllib.parse import urlsplit


def ensure_mariadb_database(url: str) -> None:
    """Create the database a mysql:// URL names, if missing (utf8mb4, as the project expects)."""
    import MySQLdb

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    server = MySQLdb.connect(
        host=parts.hostname or "127.0.0.1", port=parts.port or 3306, user=parts.username or "root",
        password=parts.password or "",
    )  # fmt: skip
    try:
        server.cursor().execute(
            f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )
    finally:
        server.close()
