"""Shared fixtures: real PostgreSQL (pytest-django's test database) and real
``manage.py runworker`` processes pointed at it; the rule that keeps ``make test-fast`` fast.

Code the tests share lives in ``tests/support/``; this file holds fixtures and hooks only.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest
from django.db.backends.postgresql.operations import DatabaseOperations

from tests.support import chromium
from tests.support.database import flush_by_delete, on_mariadb
from tests.support.model_server import ModelServer
from tests.support.workers import WorkerProcess, worker_environment

pytest_plugins = ["tests.moto_server", "jobs.testing.fixtures"]

# A test using one of these starts a process, a server (httpserver: pytest-httpserver's) or a
# browser: it is slow, whatever
# its module says. Tests that start a process themselves carry ``pytest.mark.slow``.
SLOW_FIXTURES = frozenset(
    {"start_worker", "moto_server", "moto_reset", "live_server", "browser", "httpserver", "model_server"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))  # every fixture it needs, directly or not
        if uses & SLOW_FIXTURES or item.get_closest_marker("browser") or item.get_closest_marker("serial"):
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skips decided before any fixture runs, so nothing (a test database, a live server) is
    set up for a test that will not run: a browser test without Chromium (it fails in CI), a
    PostgreSQL test on MariaDB, a serial test beside another pytest worker."""
    if item.get_closest_marker("browser"):
        chromium.require()
    workers = getattr(item.config, "workerinput", {}).get("workercount", 1)  # pytest-xdist's
    if item.get_closest_marker("serial") and workers > 1:
        # It breaks what the other pytest worker's tests use (a PostgreSQL restart).
        pytest.skip("serial: runs alone, without -n (make test runs it in a pass of its own)")
    marker = item.get_closest_marker("postgres_only")
    if marker is not None and on_mariadb():
        pytest.skip(f"PostgreSQL only: {marker.kwargs.get('reason') or marker.args[0]}")


@pytest.fixture(autouse=True)
def _processes_only_in_slow_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked slow may not start a process: ``make test-fast`` leaves out slow
    tests, and a forgotten mark would make it slow again without anybody noticing."""
    if request.node.get_closest_marker("slow"):
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{request.node.nodeid} starts a process: mark it pytest.mark.slow")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete() -> Iterator[None]:
    """Transactional tests empty the tables after themselves with DELETE (see flush_by_delete)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", flush_by_delete(DatabaseOperations.sql_flush))
        yield


@pytest.fixture(autouse=True)
def _fresh_chart_figures() -> None:
    """Each test draws the Background jobs page's charts from its own rows: the figures a
    web process keeps for 30 s would otherwise be an earlier test's."""
    from jobs.admin import charts

    charts.clear_cache()


@pytest.fixture
def worker_env() -> dict[str, str]:
    """Environment for subprocesses: the test database and short timings."""
    return worker_environment()


@pytest.fixture
def start_worker(worker_env, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real workers; every one still running at the end is stopped."""
    started: list[WorkerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        worker = WorkerProcess(
            list(args), {**worker_env, **(env or {})}, tmp_path / f"worker-{len(started)}.log"
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A local model service answering like OpenAI's Chat Completions API and Bedrock's
    Converse API, with the replies the test scripts."""
    server = ModelServer()
    yield server
    server.close()


@pytest.fixture
def openai_model(settings, model_server: ModelServer) -> ModelServer:
    """``MODEL_PROVIDER=openai`` pointed at the local model service, in this process."""
    settings.MODEL_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = model_server.openai_url
    settings.OPENAI_API_KEY = "sk-test-key"
    settings.OPENAI_MODEL = "test-model"
    settings.MODEL_TIMEOUT = 5.0
    return model_server
