"""The django.tasks contract on the engine, with real ``manage.py runworker`` processes on
the database (PostgreSQL or MariaDB): what a Django project that only writes ``@task`` code gets.

The tasks are in ``tasks.py`` (plain django.tasks code); the backend's settings, with a
short backoff and one task with a budget and a timeout of its own, are in
``config/settings_test.py``. Every wait has a deadline; none is what a test measures.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections, transaction
from django.tasks import TaskResult, TaskResultStatus, default_task_backend
from django.tasks.exceptions import TaskResultDoesNotExist
from django.utils import timezone

from jobs import store
from jobs.errors import JobTimeout, PermanentError, UnknownJobType
from jobs.models import Job, Status, Worker
from tests.jobs_app.models import Execution
from tests.support.database import on_mariadb, raw_connection
from tests.support.job_states import wait_status
from tests.support.paths import ROOT
from tests.support.waiting import wait_for
from tests.support.workers import wait_registered
from tests.tasks_backend import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def finished(result: TaskResult, timeout: float = 60.0) -> TaskResult:
    """The result read again until it is SUCCESSFUL or FAILED."""

    def read() -> TaskResult | None:
        fresh = default_task_backend.get_result(result.id)
        return fresh if fresh.is_finished else None

    return wait_for(read, timeout=timeout, interval=0.05, message=f"task result {result.id} to finish")


def runs() -> list[int]:
    """The result ids (job ids) of the recorded runs, in the order they ran."""
    return list(Execution.objects.order_by("id").values_list("job_id", flat=True))


# --- enqueue and results --------------------------------------------------------------------


def test_enqueue_and_get_result__a_worker_runs_the_task_and_its_result_is_stored(start_worker):
    start_worker("--concurrency", "1", "--name", "results")
    result = tasks.add.enqueue(2, b=3)

    done = finished(result)

    assert (done.status, done.return_value, done.args, done.kwargs) == (
        TaskResultStatus.SUCCESSFUL,
        5,
        [2],
        {"b": 3},
    )
    assert (done.worker_ids, done.attempts, done.errors) == (["results"], 1, [])
    assert done.enqueued_at <= done.started_at == done.last_attempted_at <= done.finished_at
    assert tasks.add.get_result(result.id).return_value == 5
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 5)


def test_async__an_async_task_runs_on_the_childs_event_loop_with_the_async_api(start_worker):
    start_worker("--concurrency", "1", "--name", "async")

    async def scenario() -> tuple[TaskResult, TaskResult]:
        try:
            result = await tasks.async_add.aenqueue(1, 2)
            fetched = None
            for _ in range(1200):  # at most a minute
                fetched = await default_task_backend.aget_result(result.id)
                if fetched.is_finished:
                    break
                await asyncio.sleep(0.05)
            await result.arefresh()
            assert fetched is not None
            return result, fetched
        finally:
            await sync_to_async(connections.close_all)()  # the executor thread's connection

    result, fetched = asyncio.run(scenario())

    assert (fetched.status, fetched.return_value) == (
        TaskResultStatus.SUCCESSFUL,
        {"sum": 3, "executions_seen": 0},
    )
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, fetched.return_value)


def test_run_after__the_task_starts_no_sooner(start_worker):
    start_worker("--concurrency", "1", "--name", "deferred")
    run_after = timezone.now() + timedelta(seconds=2)
    result = tasks.add.using(run_after=run_after).enqueue(1, 1)

    done = finished(result)

    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.started_at >= run_after
    assert done.task.run_after == run_after


# --- priorities and queues ------------------------------------------------------------------


def test_priority__django_integers_and_named_priorities_order_one_queue(start_worker):
    """Everything waits in ``default`` before the worker starts; one slot runs it in claim
    order, which the recorded runs show."""
    low = store.enqueue("test.record", {}, priority="low")  # Django -50
    task_minus_75 = tasks.record.using(priority=-75).enqueue()
    normal = store.enqueue("test.record", {})  # Django 0
    task_60 = tasks.record.using(priority=60).enqueue()
    critical = store.enqueue("test.record", {}, priority="critical")  # Django 100
    high = store.enqueue("test.record", {}, priority="high")  # Django 50
    task_0 = tasks.record.enqueue()
    task_100 = tasks.record.using(priority=100).enqueue()
    low_by_decorator = tasks.record_low.enqueue()  # @task(priority=-10)
    expected = [
        critical.pk,
        int(task_100.id),  # ties with critical: first come, first served
        int(task_60.id),
        high.pk,
        normal.pk,
        int(task_0.id),
        int(low_by_decorator.id),
        low.pk,
        int(task_minus_75.id),
    ]

    start_worker("--concurrency", "1", "--name", "priorities")

    wait_for(lambda: len(runs()) == len(expected), timeout=60, message="every job and task to run")
    assert runs() == expected


def test_queues__a_task_runs_on_its_queue_and_lanes_apply(start_worker):
    default_lane = start_worker("--queue", "default:1", "--name", "default-lane")
    report = tasks.report.enqueue()
    added = tasks.add.enqueue(1, 2)
    assert finished(added).worker_ids == ["default-lane"]
    assert default_task_backend.get_result(report.id).status == TaskResultStatus.READY

    start_worker("--queue", "reports:1", "--name", "reports-lane")
    assert finished(report).worker_ids == ["reports-lane"]

    default_lane.stop()
    start_worker("--name", "every-queue")  # no --queue: the backend's queues are served too
    wait_registered("every-queue")
    (lane,) = Worker.objects.get(name="every-queue").queues
    assert "reports" in lane.split(":")[0].split(",")


def test_fair_share__a_busy_task_child_leaves_the_other_child_to_another_queues_task(start_worker, tmp_path):
    """A plain runworker (two slots, every queue) counts tasks by their rows' queues: while
    one child runs a long task of "default", the other runs the "mail" task that is due,
    and the second "default" task waits its turn instead of sitting prefetched."""
    gate = tmp_path / "gate"
    held = [tasks.hold.enqueue(str(tmp_path / f"held-{n}"), str(gate)) for n in range(2)]
    worker = start_worker("--concurrency", "2", "--shutdown-timeout", "0.5", "--name", "fair")
    wait_for(
        lambda: any((tmp_path / f"held-{n}").exists() for n in range(2)),
        timeout=60,
        message="a held task to start",
    )

    mail = tasks.mail_add.enqueue(2, 3)  # due while a "default" task holds one child

    assert finished(mail, timeout=30).worker_ids == ["fair"]
    assert not gate.exists()
    statuses = sorted(default_task_backend.get_result(result.id).status for result in held)
    assert statuses == [TaskResultStatus.READY, TaskResultStatus.RUNNING]
    assert "at most 1 per queue" in worker.log()
    gate.touch()
    assert [finished(result).return_value for result in held] == ["released", "released"]


# --- failures -------------------------------------------------------------------------------


def test_failing_task__is_retried_by_the_backends_policy_and_keeps_each_error(start_worker):
    start_worker("--concurrency", "2", "--name", "retries")
    flaky = tasks.flaky.enqueue(1)
    failing = tasks.always_fails.enqueue()  # its own budget: 2 attempts
    refused = tasks.refuses.enqueue()  # raises jobs.PermanentError

    recovered = finished(flaky)
    assert (recovered.status, recovered.return_value, recovered.attempts) == (
        TaskResultStatus.SUCCESSFUL,
        2,
        2,
    )
    (error,) = recovered.errors
    assert error.exception_class is ConnectionError
    assert "transient failure on try 1" in error.traceback and "in flaky" in error.traceback

    failed = finished(failing)
    assert (failed.status, failed.attempts, failed.worker_ids) == (
        TaskResultStatus.FAILED,
        2,
        ["retries"] * 2,
    )
    assert [error.exception_class for error in failed.errors] == [tasks.ComplexError] * 2
    assert "raise ComplexError(7" in failed.errors[-1].traceback
    assert failed.errors[-1].traceback.rstrip().endswith("tests.tasks_backend.tasks.ComplexError: code 7")
    with pytest.raises(ValueError, match="Task failed"):
        _ = failed.return_value

    permanent = finished(refused)
    assert (permanent.status, permanent.attempts) == (TaskResultStatus.FAILED, 1)
    assert [error.exception_class for error in permanent.errors] == [PermanentError]


def test_timeout__a_tasks_own_timeout_stops_each_try(start_worker):
    start_worker("--concurrency", "1", "--name", "timeouts")
    result = tasks.sleepy.enqueue(30)  # its own options: 0.5 s timeout, 2 attempts

    failed = finished(result)

    assert (failed.status, failed.attempts) == (TaskResultStatus.FAILED, 2)
    assert [error.exception_class for error in failed.errors] == [JobTimeout, JobTimeout]


def test_complex_return_value__is_stored_as_json(start_worker):
    start_worker("--concurrency", "1", "--name", "values")
    result = tasks.complex_value.enqueue()

    assert finished(result).return_value == {
        "list": [1, 2.5, "three", None, True],
        "tuple": [4, 5],
        "nested": {"é": {"x": []}},
    }
    assert Job.objects.get(pk=int(result.id)).result["tuple"] == [4, 5]


def test_unstorable_return_value__fails_the_task_at_once_with_a_clear_error(start_worker):
    start_worker("--concurrency", "1", "--name", "unstorable")
    result = tasks.unstorable_value.enqueue()

    failed = finished(result)

    assert (failed.status, failed.attempts) == (TaskResultStatus.FAILED, 1)  # never retried
    (error,) = failed.errors
    assert error.exception_class is TypeError  # as Django's own backends record it
    assert "TypeError: Unsupported type: <class 'module'>" in error.traceback  # the serializer's
    assert "returned a dict, which cannot be stored as JSON" in error.traceback
    assert Job.objects.get(pk=int(result.id)).result is None


@pytest.fixture
def vanishing_module(tmp_path: Path) -> Iterator[str]:
    """A task module that this process can import and the workers cannot: a task that was
    moved or deleted after it was enqueued."""
    name = "vanishing_tasks"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            from django.tasks import task

            @task
            def gone() -> int:
                return 1
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)


def test_missing_task_path__fails_that_task_for_good_and_the_child_carries_on(start_worker, vanishing_module):
    worker = start_worker("--concurrency", "1", "--name", "missing")
    before = tasks.record.enqueue()
    finished(before)
    gone = __import__(vanishing_module).gone.enqueue()
    after = tasks.record.enqueue()

    failed = finished(gone)
    assert (failed.status, failed.attempts) == (TaskResultStatus.FAILED, 1)
    (error,) = failed.errors
    assert error.exception_class is UnknownJobType
    assert "no django.tasks task can be imported from it (ModuleNotFoundError" in error.traceback
    assert "Unknown job type 'vanishing_tasks.gone'" in error.traceback
    finished(after)
    # The same child process ran the tasks before and after: it never crashed.
    assert Execution.objects.filter(job_id=int(before.id)).get().pid == (
        Execution.objects.filter(job_id=int(after.id)).get().pid
    )
    assert "child process" not in worker.log()


# --- context, transactions, signals ---------------------------------------------------------


def test_takes_context__the_task_gets_its_attempt_and_its_result(start_worker):
    start_worker("--concurrency", "1", "--name", "context")
    result = tasks.record.enqueue(label="ctx")

    assert finished(result).return_value == {
        "label": "ctx",
        "attempt": 1,
        "status": "RUNNING",
        "workers": ["context"],
    }
    retried = finished(tasks.flaky.enqueue(2))  # flaky raises while context.attempt <= 2
    assert (retried.return_value, retried.attempts) == (3, 3)


def test_context__a_tries_result_reads_as_get_result_whether_its_claim_brought_its_row_or_not(start_worker):
    # The worker learns the task's type from its first job: later claims bring what the
    # tries read of their rows (PostgreSQL), where the first one's child read it.
    start_worker("--concurrency", "1", "--name", "times")
    for _ in range(3):
        done = finished(tasks.record_times.enqueue())
        assert done.return_value == {
            "enqueued_at": done.enqueued_at.isoformat(),
            "started_at": done.started_at.isoformat(),
        }


def test_transaction__a_commit_wakes_the_worker_and_a_rollback_leaves_nothing(start_worker):
    # PostgreSQL: the worker never polls, so only the commit's NOTIFY wakes it. MariaDB has
    # no NOTIFY: the worker polls, and the commit is what shows the task to its claim.
    poll_interval = "0.1" if on_mariadb() else "3600"
    start_worker("--concurrency", "1", "--poll-interval", poll_interval, "--name", "transactions")
    finished(tasks.record.enqueue())  # the worker is in its loop; idle now, only NOTIFY wakes it

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        dropped = tasks.record.enqueue(label="rolled back")
        raise Abort
    with transaction.atomic():
        kept = tasks.record.enqueue(label="committed")

    assert finished(kept).return_value["label"] == "committed"
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(dropped.id)
    assert int(dropped.id) not in runs()


def test_signals__enqueued_where_it_is_enqueued_started_and_finished_in_the_worker(start_worker, tmp_path):
    log = tmp_path / "signals.log"
    start_worker("--concurrency", "1", "--name", "signals")

    result = tasks.flaky.enqueue(1, signal_log=str(log))
    finished(result)

    wait_for(lambda: log.exists() and len(log.read_text().splitlines()) == 5, message="five signals")
    seen = [line.split() for line in log.read_text().splitlines()]
    assert [(name, status, attempts) for name, _, status, attempts, _ in seen] == [
        ("enqueued", "READY", "0"),
        ("started", "RUNNING", "1"),
        ("finished", "READY", "1"),  # a retry follows
        ("started", "RUNNING", "2"),
        ("finished", "SUCCESSFUL", "2"),
    ]
    assert {line[1] for line in seen} == {result.id}
    pids = [int(line[4]) for line in seen]
    assert pids[0] == os.getpid()
    assert os.getpid() not in pids[1:]


# --- the page -------------------------------------------------------------------------------


def test_page__a_task_is_a_job_of_its_module_path_with_retry(start_worker):
    failing = tasks.always_fails.enqueue()
    start_worker("--concurrency", "1", "--name", "page")
    finished(failing)

    job = wait_status(int(failing.id), Status.FAILED)
    assert job.type == "tests.tasks_backend.tasks.always_fails"
    store.retry(job)  # the page's Retry (the worker may take it at once: not asserted READY here)
    again = finished(failing)
    assert (again.status, again.attempts) == (TaskResultStatus.FAILED, 4)  # every try is kept


# --- a project of its own -------------------------------------------------------------------


@pytest.fixture
def fresh_database() -> Iterator[dict[str, str]]:
    """An empty database for the fresh project, dropped afterwards."""
    db = settings.DATABASES["default"]
    name = f"{db['NAME']}_fresh"
    if on_mariadb():  # the server's default collation of utf8mb4, as a new project's session has
        drop, create = f"DROP DATABASE IF EXISTS `{name}`", f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"
    else:
        drop, create = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
    with raw_connection() as admin:
        admin.execute(drop)
        admin.execute(create)
    yield {
        "FRESH_DATABASE_ENGINE": db["ENGINE"],
        "FRESH_DATABASE": name,
        "FRESH_DATABASE_USER": db["USER"],
        "FRESH_DATABASE_HOST": db["HOST"],
        "FRESH_DATABASE_PORT": str(db["PORT"]),
    }
    with raw_connection() as admin:
        admin.execute(drop)


def fresh_project_environment(database: dict[str, str]) -> dict[str, str]:
    """This process's environment for the fresh project on ``database``, without this
    project's settings."""
    return {
        **{
            key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_URL"))
        },
        **database,
        "DJANGO_SETTINGS_MODULE": "tests.tasks_backend.fresh_project.settings",
    }


def run_python(*args: str, env: dict[str, str], cwd: Path = ROOT) -> str:
    """``python *args`` in a process of its own; its output, once it exited 0."""
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_fresh_project__that_only_sets_tasks_runs_them_on_runworker(fresh_database):
    env = fresh_project_environment(fresh_database)

    def django(*args: str) -> str:
        return run_python("-m", "django", *args, env=env)

    def shell(code: str) -> str:
        return django("shell", "--no-imports", "-c", textwrap.dedent(code))

    django("migrate", "--verbosity", "0")
    ids = shell(
        """
        from tests.tasks_backend.fresh_project.tasks import fail, greet, shout
        print(greet.enqueue("Ada").id, shout.enqueue("ada").id, fail.enqueue().id)
        """
    ).split()
    django("runworker", "--burst")
    read = shell(
        f"""
        from django.tasks import default_task_backend
        for result_id in {ids!r}:
            result = default_task_backend.get_result(result_id)
            value = result.return_value if result.status == "SUCCESSFUL" else None
            print(result.task.name, result.status, result.attempts, value, *[e.exception_class_path for e in result.errors])
        """
    )
    assert read.splitlines() == [
        "greet SUCCESSFUL 1 Hello, Ada!",
        "shout SUCCESSFUL 1 ADA",
        "fail READY 1 None builtins.LookupError",  # a retry waits out the default backoff
    ]


def test_run_burst_worker__drains_a_project_without_manage_py_from_another_folder(fresh_database, tmp_path):
    """A script of a project laid out unlike this repository (no manage.py, no BASE_DIR;
    its settings found through the script's own sys.path, run from an unrelated folder)
    drains its queue with ``jobs.run_burst_worker``."""
    env = fresh_project_environment(fresh_database)
    env.pop("PYTHONPATH", None)  # the project's folder is on the script's path only
    run_python("-m", "django", "migrate", "--verbosity", "0", env=env)
    script = f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})  # as a script beside the project finds it
        import django
        django.setup()
        from pathlib import Path
        from django.tasks import default_task_backend
        import jobs
        from tests.tasks_backend.fresh_project.tasks import greet
        result = greet.enqueue("Grace")
        jobs.run_burst_worker("--concurrency", "1", log_path=Path("burst.log"))
        print(default_task_backend.get_result(result.id).return_value)
    """
    output = run_python("-c", textwrap.dedent(script), env=env, cwd=tmp_path)
    assert output.splitlines() == ["Hello, Grace!"]
