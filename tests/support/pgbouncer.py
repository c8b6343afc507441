"""A PgBouncer of our own in front of the local PostgreSQL, in transaction pooling mode:
its config, auth file and log in a folder of its own, on a free port, stopped for sure.

PgBouncer refuses to run as root; as root it is started with ``-u`` as the owner of the
PostgreSQL cluster's files (``postgres``), and its folder is handed to that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SEARCH_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin"


def executable() -> str | None:
    return shutil.which("pgbouncer", path=SEARCH_PATH)


def version() -> str:
    """``PgBouncer 1.18.0``: the first line of ``pgbouncer --version``."""
    found = executable()
    if found is None:
        return "not installed"
    return subprocess.run(
        [found, "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PgBouncer:
    """``pool_mode = transaction`` in front of ``upstream``; every database name passes
    through, and ``user`` logs in without a password (the local server trusts it).

    ``pool_size`` server connections per database and user, shared by up to
    ``max_clients`` client connections: fewer server connections than clients is the point.
    """

    def __init__(
        self,
        upstream: tuple[str, int] = ("127.0.0.1", 5432),
        *,
        user: str = "postgres",
        pool_size: int = 4,
        max_clients: int = 500,
    ) -> None:
        found = executable()
        if found is None:
            raise FileNotFoundError("pgbouncer is not installed (make test installs Debian's pgbouncer)")
        self.user = user
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
        self.log_path = self.folder / "pgbouncer.log"
        config = self.folder / "pgbouncer.ini"
        auth = self.folder / "userlist.txt"
        auth.write_text(f'"{user}" ""\n')
        config.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = host={upstream[0]} port={upstream[1]}",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {auth}",
                    f"admin_users = {user}",
                    "pool_mode = transaction",
                    f"default_pool_size = {pool_size}",
                    f"max_client_conn = {max_clients}",
                    f"logfile = {self.log_path}",
                    "",
                ]
            )
        )
        command = [found]
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            for path in (self.folder, config, auth):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            command += ["-u", "postgres"]
        self.process = subprocess.Popen(
            [*command, str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{database}"

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited with {self.process.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"pgbouncer did not listen on {self.port}: {self.log()}") from None
                time.sleep(0.05)

    def show(self, what: str) -> list[dict[str, object]]:
        """``SHOW POOLS``, ``SHOW STATS``, … on the admin console, as dicts."""
        with psycopg.connect(self.url("pgbouncer"), autocommit=True, prepare_threshold=None) as admin:
            cursor = admin.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def log(self) -> str:
        try:
            return self.log_path.read_text()[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGINT)  # safe shutdown: waits for running queries
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PgBouncer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
