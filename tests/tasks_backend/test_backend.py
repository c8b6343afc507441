"""The django.tasks backend without a worker: its settings, what enqueue stores, and how a
row in each state reads as a ``TaskResult`` (states made through the store, as a worker
would make them). The same behaviours with real workers are in ``test_contract.py``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.tasks import TaskResultStatus, default_task_backend, task
from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import jobs
from jobs import registry, retries, store
from jobs.backends import JobsBackend
from jobs.context import JobContext
from jobs.django_tasks import results as task_results
from jobs.django_tasks import types
from jobs.django_tasks.backend import DEFAULT_POLICY
from jobs.drivers import driver
from jobs.drivers.orm import stored_moment
from jobs.errors import InvalidTaskArguments
from jobs.flow import admission
from jobs.models import Job, Priority, Status
from jobs.registry import DEFAULT_BACKOFF, DEFAULT_BACKOFF_CAP
from jobs.store import Failure
from tests.admin_jobs import PAGE, make_operator
from tests.support.database import raw_connection
from tests.support.job_states import make_due, make_silent
from tests.tasks_backend import tasks

pytestmark = pytest.mark.django_db

ADD = "tests.tasks_backend.tasks.add"


def backend(**params: Any) -> JobsBackend:
    return JobsBackend("custom", {"BACKEND": "jobs.backends.JobsBackend", **params})


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, message",
    [
        ({"QUEUES": []}, "must name at least one queue"),
        ({"QUEUES": "default"}, "must be a list of queue names"),
        ({"QUEUES": ["mail:2"]}, "'mail:2' is not a queue name"),
        ({"QUEUES": ["x" * 51]}, "is not a queue name"),
        ({"OPTIONS": {"retries": 3}}, "unknown option 'retries'"),
        ({"OPTIONS": {"attempts": 0}}, "attempts'] must be a whole number, at least 1"),
        ({"OPTIONS": {"attempts": "3"}}, "attempts'] must be a whole number"),
        ({"OPTIONS": {"backoff": "30"}}, "backoff'] must be a list of seconds"),
        ({"OPTIONS": {"backoff": [30, -1]}}, "none negative"),
        ({"OPTIONS": {"timeout": 0}}, "timeout'] must be positive seconds"),
        ({"OPTIONS": {"tasks": [ADD]}}, "must map task module paths to options"),
        ({"OPTIONS": {"tasks": {ADD: {"attempts": 0}}}}, f"\\['tasks'\\]\\['{ADD}'\\]\\['attempts'\\]"),
    ],
    ids=[
        "no queues",
        "queues as text",
        "queue with a colon",
        "queue too long",
        "unknown option",
        "no attempts",
        "attempts as text",
        "backoff as text",
        "negative backoff",
        "zero timeout",
        "tasks as a list",
        "a task's bad option",
    ],
)
def test_settings__a_malformed_backend_is_refused_naming_the_setting(params, message):
    with pytest.raises(InvalidTaskBackend, match=message):
        backend(**params)


def test_settings__defaults_are_the_engines_and_a_task_overrides_them():
    configured = backend(OPTIONS={"attempts": 5, "tasks": {ADD: {"timeout": 9, "backoff": [1]}}})
    assert DEFAULT_POLICY == {
        "attempts": 3,
        "backoff": DEFAULT_BACKOFF,
        "backoff_cap": DEFAULT_BACKOFF_CAP,
        "timeout": None,
    }
    job_type = configured.job_type(tasks.add)
    assert (job_type.attempts, job_type.backoff, job_type.timeout, job_type.keeps_result) == (
        5,
        (1,),
        9,
        True,
    )
    other = configured.job_type(tasks.nothing)
    assert (other.attempts, other.backoff, other.timeout) == (5, DEFAULT_BACKOFF, None)


def test_settings__a_task_may_have_flow_limits_keyed_by_its_keyword_arguments():
    limits = {"concurrency": 1, "concurrency_key": "sum:{a}", "rate": "10/s"}
    configured = backend(QUEUES=["default", "mail"], OPTIONS={"tasks": {ADD: limits}})
    found = configured.job_type(tasks.add).limits
    assert found is not None and (found.concurrency, str(found.rate)) == (1, "10/s")
    assert configured.job_type(tasks.nothing).limits is None
    assert configured.limited_queues() == {"default", "mail"}  # a task's queue is its declaration's
    with pytest.raises(InvalidTaskBackend, match="concurrency_key needs concurrency=N"):
        backend(OPTIONS={"tasks": {ADD: {"concurrency_key": "sum:{a}"}}})
    with pytest.raises(InvalidTaskBackend, match="unknown option 'limit'.*'concurrency'"):
        backend(OPTIONS={"tasks": {ADD: {"limit": 1}}})
    with pytest.raises(InvalidTaskBackend, match="must read like '60/m'"):
        backend(OPTIONS={"tasks": {ADD: {"rate": "ten"}}})


def test_enqueue__a_limited_task_stores_its_keys_and_runs_under_its_limit():
    options = {"tasks": {ADD: {"concurrency": 1, "concurrency_key": "sum:{a}"}}}
    with override_settings(TASKS={"default": {"BACKEND": "jobs.backends.JobsBackend", "OPTIONS": options}}):
        first, twin, other = (tasks.add.enqueue(a=a, b=b) for a, b in ((1, 2), (1, 3), (2, 2)))
        unkeyed = tasks.add.enqueue(1, 2)  # positional: no keyword argument names the key
        assert Job.objects.get(pk=first.id).concurrency_key == "sum:1"
        assert Job.objects.get(pk=unkeyed.id).concurrency_key is None
        rules = admission.Rules(queues={}, type_limits=registry.limits_of)
        claimed = store.claim_flowed("w", ["default"], 10, rules, keyed_only=True)
        assert [job.id for job in claimed.jobs] == [int(first.id), int(other.id)]
        assert claimed.full_keys == {"sum:1"}
        assert Job.objects.get(pk=twin.id).status == Status.QUEUED


def test_settings__workers_serve_the_backends_queues_by_default():
    assert {"default", "reports"} <= set(registry.queues())
    with override_settings(TASKS={"default": {"BACKEND": "jobs.backends.JobsBackend", "QUEUES": ["digest"]}}):
        assert "digest" in registry.queues()
    assert "digest" not in registry.queues()


# --- enqueue --------------------------------------------------------------------------------


def test_enqueue__stores_a_job_of_the_tasks_path_queue_priority_and_arguments():
    result = tasks.add.using(priority=10).enqueue(2, b=3)

    job = Job.objects.get(pk=int(result.id))
    assert (job.type, job.queue, job.status, job.priority) == (ADD, "default", Status.QUEUED, -10)
    assert (job.payload, job.max_attempts, job.dedupe_key) == ({"args": [2], "kwargs": {"b": 3}}, 3, None)
    assert (result.status, result.args, result.kwargs, result.enqueued_at) == (
        TaskResultStatus.READY,
        [2],
        {"b": 3},
        job.created_at,
    )
    assert result.task.priority == 10 and result.backend == "default"


def test_enqueue__the_tasks_queue_is_the_jobs_queue():
    result = tasks.report.enqueue()
    assert Job.objects.get(pk=int(result.id)).queue == "reports"


def test_enqueue__a_queue_outside_QUEUES_is_refused_as_django_does():
    with pytest.raises(InvalidTask, match="Queue 'ai' is not valid for backend"):
        tasks.add.using(queue_name="ai")
    assert not Job.objects.exists()


def test_enqueue__arguments_that_are_not_json_are_refused():
    with pytest.raises(TypeError, match=f"arguments of task {ADD} must be JSON-serialisable"):
        tasks.add.enqueue(object(), 1)
    assert not Job.objects.exists()


def plain(a: int) -> int:
    return a


# ``plain`` stays the module's name for the function: its path leads to no task.
unreachable = task(plain)


def test_enqueue__a_task_that_its_module_path_does_not_lead_to_is_refused():
    with pytest.raises(InvalidTask, match="cannot be found by its module path"):
        unreachable.enqueue(1)
    assert not Job.objects.exists()


def test_enqueue__run_after_sets_when_it_is_due():
    later = timezone.now() + timedelta(hours=2)
    result = tasks.add.using(run_after=later).enqueue(1, 1)
    assert Job.objects.get(pk=int(result.id)).run_at == later
    assert default_task_backend.get_result(result.id).task.run_after == later


def test_enqueue__the_backends_attempts_and_a_tasks_own_are_the_jobs_budget():
    assert Job.objects.get(pk=int(tasks.add.enqueue(1, 1).id)).max_attempts == 3
    assert Job.objects.get(pk=int(tasks.always_fails.enqueue().id)).max_attempts == 2


@pytest.mark.django_db(transaction=True)
def test_enqueue__in_a_transaction_exists_and_signals_only_once_it_commits():
    sent: list[str] = []

    def on_enqueued(sender: type, task_result: Any, **kwargs: Any) -> None:
        sent.append(task_result.id)

    task_enqueued.connect(on_enqueued)
    try:
        with transaction.atomic():
            kept = tasks.add.enqueue(1, 2)
            assert sent == []
        assert sent == [kept.id]

        class Abort(Exception):
            pass

        with pytest.raises(Abort), transaction.atomic():
            dropped = tasks.add.enqueue(3, 4)
            raise Abort
        assert sent == [kept.id]
        with pytest.raises(TaskResultDoesNotExist):
            default_task_backend.get_result(dropped.id)

        outside = tasks.add.enqueue(5, 6)  # autocommit: signalled at once
        assert sent == [kept.id, outside.id]
    finally:
        task_enqueued.disconnect(on_enqueued)


@pytest.mark.django_db(transaction=True)
def test_enqueue__in_a_transaction_is_invisible_to_other_sessions_until_it_commits():
    query = "SELECT count(*) FROM jobs_job WHERE type = %s"
    with raw_connection() as other:
        with transaction.atomic():
            tasks.add.enqueue(1, 2)
            assert other.execute(query, [ADD]).fetchone() == (0,)
        assert other.execute(query, [ADD]).fetchone() == (1,)


# --- results --------------------------------------------------------------------------------


def claim(worker: str = "w1") -> store.ClaimedJob:
    (claimed,) = store.claim(worker, ["default"], 1)
    return claimed


@pytest.mark.django_db(transaction=True)  # each step commits, so its now() is its own
def test_get_result__follows_the_row_through_a_retry_to_success():
    result = tasks.flaky.enqueue(1)
    assert default_task_backend.get_result(result.id).status == TaskResultStatus.READY

    first = claim("w1")
    running = default_task_backend.get_result(result.id)
    assert (running.status, running.worker_ids, running.attempts) == (TaskResultStatus.RUNNING, ["w1"], 1)
    assert running.started_at == running.last_attempted_at is not None

    failure = Failure(
        "ConnectionError", "try 1", "Traceback (most recent call last):\nConnectionError: try 1\n"
    )
    store.fail("w1", first.id, first.attempt, failure)
    waiting = default_task_backend.get_result(result.id)
    assert (waiting.status, waiting.attempts, waiting.finished_at) == (TaskResultStatus.READY, 1, None)
    assert [error.exception_class_path for error in waiting.errors] == ["builtins.ConnectionError"]
    assert waiting.errors[0].exception_class is ConnectionError
    assert waiting.task.run_after is not None  # waiting out the backoff

    make_due(first.id)
    second = claim("w2")
    store.complete("w2", [(second.id, second.attempt)], ['{"answer": 42}'])
    done = default_task_backend.get_result(result.id)
    assert (done.status, done.return_value, done.worker_ids) == (
        TaskResultStatus.SUCCESSFUL,
        {"answer": 42},
        ["w1", "w2"],
    )
    assert done.started_at < done.last_attempted_at < done.finished_at
    assert len(done.errors) == 1


def test_get_result__a_task_that_failed_for_good_has_every_error():
    result = tasks.always_fails.enqueue()
    for worker in ("w1", "w2"):
        claimed = claim(worker)
        store.fail(
            worker,
            claimed.id,
            claimed.attempt,
            Failure("tests.tasks_backend.tasks.ComplexError", "code 7", "tb"),
        )
        make_due(claimed.id)

    failed = default_task_backend.get_result(result.id)
    assert (failed.status, failed.attempts, failed.worker_ids) == (TaskResultStatus.FAILED, 2, ["w1", "w2"])
    assert [error.exception_class for error in failed.errors] == [tasks.ComplexError, tasks.ComplexError]
    with pytest.raises(ValueError, match="Task failed"):
        _ = failed.return_value


def test_get_result__engine_failures_name_importable_classes():
    result = tasks.sleepy.enqueue(5)
    claimed = claim()
    store.fail("w1", claimed.id, claimed.attempt, Failure("JobTimeout", "ran longer than 0.5s"))
    (error,) = default_task_backend.get_result(result.id).errors
    assert error.exception_class is jobs.errors.JobTimeout
    assert error.traceback == "JobTimeout: ran longer than 0.5s"


def test_get_result__a_cancelled_task_is_failed_and_says_so():
    result = tasks.add.enqueue(1, 2)
    jobs.cancel(int(result.id))

    cancelled = default_task_backend.get_result(result.id)
    assert cancelled.status == TaskResultStatus.FAILED and cancelled.finished_at is not None
    assert [error.exception_class for error in cancelled.errors] == [jobs.errors.TaskCancelled]


def test_get_result__refresh_reads_the_row_again():
    result = tasks.add.enqueue(1, 2)
    claimed = claim()
    store.complete("w1", [(claimed.id, claimed.attempt)], ["3"])

    assert result.status == TaskResultStatus.READY
    result.refresh()
    assert (result.status, result.return_value, result.worker_ids) == (TaskResultStatus.SUCCESSFUL, 3, ["w1"])
    assert tasks.add.get_result(result.id).return_value == 3


def test_get_result__of_a_pruned_task_does_not_exist():
    result = tasks.add.enqueue(1, 2)
    claimed = claim()
    store.complete("w1", [(claimed.id, claimed.attempt)], ["3"])
    Job.objects.filter(pk=claimed.id).update(finished_at=timezone.now() - timedelta(days=30))

    assert store.prune() == 1
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result.id)


@pytest.mark.parametrize("result_id", ["abc", "", "12.5", "-3", str(2**63)])
def test_get_result__of_an_id_that_is_no_number_does_not_exist(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)


def test_get_result__of_a_job_is_not_a_task_result():
    job = jobs.enqueue("test.noop", {})
    with pytest.raises(TaskResultDoesNotExist, match="is a test.noop job, not a django.tasks task"):
        default_task_backend.get_result(str(job.pk))


def test_get_result__of_a_task_whose_path_no_longer_imports_says_why():
    job = store.enqueue_task(
        "tests.tasks_backend.gone.task",
        {"args": [], "kwargs": {}},
        queue="default",
        priority=0,
        max_attempts=1,
    )
    with pytest.raises(
        TaskResultDoesNotExist, match="no django.tasks task can be imported from it \\(ModuleNotFoundError"
    ):
        default_task_backend.get_result(str(job.pk))


def test_resolve__a_path_that_is_not_a_task_is_an_unknown_type():
    with pytest.raises(jobs.UnknownJobType, match="it names a function, not a django.tasks task"):
        types.resolve("os.path.join")
    with pytest.raises(jobs.UnknownJobType, match="not the module path"):
        types.resolve("__main__.add")


@pytest.mark.parametrize(
    "value, reason",
    [({1, 2}, "Unsupported type"), (float("nan"), "Out of range float"), ({"x": ["a\x00"]}, "NUL")],
    ids=["set", "nan", "nul"],
)
def test_return_value__that_cannot_be_stored_is_the_serializers_type_error_never_retried(value, reason):
    runner = default_task_backend.job_type(tasks.add).func
    with pytest.raises(TypeError, match=reason) as raised:
        runner._encode(value)
    assert type(raised.value) is TypeError  # what Django's own backends record
    assert "Task tests.tasks_backend.tasks.add returned a " in raised.value.__notes__[0]
    assert not retries.retryable(raised.value)
    assert runner._encode({"é": (1, None)}) == '{"\\u00e9": [1, null]}'


def _backend_with(**options: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": "jobs.backends.JobsBackend", "QUEUES": ["default"], "OPTIONS": options}}


@pytest.mark.django_db(transaction=True)  # each step commits, so its now() is its own
def test_reap__a_dead_workers_task_waits_out_the_backends_backoff_before_it_returns():
    with override_settings(TASKS=_backend_with(backoff=[45])):
        result = tasks.add.enqueue(1, 2)
        claim("w1")
        make_silent(int(result.id), 3600)
        before = timezone.now()
        assert store.reap() == store.ReapResult(requeued=1)
        row = Job.objects.get(pk=int(result.id))
        assert store.claim("w2", ["default"], 1) == []  # not before its backoff
    assert (row.status, row.attempts) == (Status.QUEUED, 1)
    assert row.run_at >= before + timedelta(seconds=45)


@pytest.mark.django_db(transaction=True)
def test_retry_later__on_a_tasks_last_attempt_finishes_the_try_ready_as_the_store_requeues_it():
    seen: list[tuple[TaskResultStatus, Any]] = []

    def on_finished(sender: type, task_result: Any, **kwargs: Any) -> None:
        seen.append((task_result.status, task_result.finished_at))

    task_finished.connect(on_finished)
    try:
        with override_settings(TASKS=_backend_with(attempts=1)):
            result = tasks.postpones.enqueue()
            claimed = claim("w1")
            assert (claimed.attempt, claimed.max_attempts) == (1, 1)  # its last attempt
            ctx = JobContext(claimed.id, claimed.type, claimed.attempt, claimed.max_attempts, "w1")
            with pytest.raises(jobs.RetryLater) as raised:
                default_task_backend.job_type(tasks.postpones).func(ctx, args=[], kwargs={})
            store.reschedule("w1", claimed.id, claimed.attempt, raised.value.at, raised.value.reason)
            stored = default_task_backend.get_result(result.id)
    finally:
        task_finished.disconnect(on_finished)
    assert seen == [(TaskResultStatus.READY, None)]
    assert (stored.status, stored.finished_at) == (TaskResultStatus.READY, None)


# --- a try in a worker's child --------------------------------------------------------------


FIELDS = ("id", "status", "enqueued_at", "started_at", "finished_at", "last_attempted_at", "args",
          "kwargs", "backend", "errors", "worker_ids")  # fmt: skip
AS_ENQUEUED = ("queue_name", "priority", "run_after")


def as_read(result: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    return tuple(getattr(result, name) for name in FIELDS), tuple(
        getattr(result.task, name) for name in AS_ENQUEUED
    )


def fields_of(job: store.ClaimedJob) -> Any:
    """The job as a worker's child gets it (``jobs.worker.messages.JobFields``)."""
    return tuple(job)


@pytest.mark.django_db(transaction=True)  # the claim commits, so its started_at is stored
@pytest.mark.parametrize("brought", [True, False], ids=["fields-the-claim-brought", "fields-read"])
def test_a_first_try__reads_as_get_result_reads_its_row(brought):
    # Enqueued deferred, in another queue, at another priority: each part of the result the
    # claim's own fields do not give comes from what the claim brought or the child read.
    task = tasks.mail_add.using(priority=7, run_after=timezone.now() - timedelta(seconds=1))
    result = task.enqueue(2, b=3)
    Job.objects.filter(pk=int(result.id)).update(created_at=timezone.now() - timedelta(hours=1))
    (claimed,) = store.claim("w7", ["mail"], 1, with_rows=[tasks.mail_add.module_path] if brought else [])

    task_results.prefetch([fields_of(claimed)])
    running = task_results.of_try(claimed.id, tasks.mail_add, "w7", [2], {"b": 3})
    stored = default_task_backend.get_result(result.id)

    assert as_read(running) == as_read(stored)
    assert (running.status, running.worker_ids, running.errors) == (TaskResultStatus.RUNNING, ["w7"], [])
    assert (running.task.queue_name, running.task.priority) == ("mail", 7)
    assert running.enqueued_at < running.task.run_after <= running.started_at


@pytest.mark.postgres_only("the claim that brings what a try reads: MariaDB's child reads it")
def test_claim_with_rows__brings_what_the_tasks_tries_read_and_nothing_for_other_jobs():
    task_result = tasks.add.enqueue(1, 2)
    job = jobs.enqueue("test.noop", {})

    claimed = store.claim("w1", ["default"], 2, with_rows=[tasks.add.module_path])

    by_id = {one.id: one for one in claimed}
    assert by_id[job.pk].try_fields is None
    (read,) = driver().task_try_rows([int(task_result.id)])
    priority, run_at, created_at, started_at, tried = by_id[int(task_result.id)].try_fields
    assert (priority, stored_moment(run_at), stored_moment(created_at), stored_moment(started_at), tried) == (
        read.priority,
        read.run_at,
        read.created_at,
        read.started_at,
        read.tried,
    )
    task_results.prefetch([fields_of(by_id[int(task_result.id)])])
    with CaptureQueriesContext(connection) as queries:
        task_results.of_try(int(task_result.id), tasks.add, "w1", [1, 2], {})
    assert len(queries) == 0  # the try read nothing: its claim brought it


@pytest.mark.postgres_only("the claim that brings what a try reads: MariaDB's child reads it")
def test_claim_with_rows__says_whether_a_task_has_failed_tries():
    tasks.flaky.enqueue(1)
    first = claim("w1")
    store.fail("w1", first.id, first.attempt, Failure("ConnectionError", "try 1", "tb"))
    make_due(first.id)

    (second,) = store.claim("w2", ["default"], 1, with_rows=[tasks.flaky.module_path])

    assert second.try_fields is not None and second.try_fields[-1] is True


@pytest.mark.django_db(transaction=True)
def test_a_try_after_a_failed_one__reads_its_errors_as_get_result_does():
    result = tasks.flaky.enqueue(1)
    first = claim("w1")
    store.fail("w1", first.id, first.attempt, Failure("ConnectionError", "try 1", "tb"))
    make_due(first.id)
    second = claim("w2")

    task_results.prefetch([fields_of(second)])
    running = task_results.of_try(second.id, tasks.flaky, "w2", [1], {})

    assert as_read(running) == as_read(default_task_backend.get_result(result.id))
    assert (running.worker_ids, [error.exception_class for error in running.errors]) == (
        ["w1", "w2"],
        [ConnectionError],
    )


def run_in_child(task: Any, *args: Any, **kwargs: Any) -> Any:
    """One try of ``task`` as a worker's child runs it, on a claimed row."""
    task.enqueue(*args, **kwargs)
    claimed = claim("w1")
    ctx = JobContext(claimed.id, claimed.type, claimed.attempt, claimed.max_attempts, "w1")
    return default_task_backend.job_type(task).func(ctx, args=list(args), kwargs=kwargs)


@pytest.mark.parametrize("task", [tasks.add, tasks.async_add], ids=["sync", "async"])
def test_arguments_that_do_not_fit__fail_the_try_saying_which_task(task):
    with pytest.raises(
        InvalidTaskArguments, match=f"Task {task.module_path}: missing a required argument: 'b'"
    ):
        run_in_child(task, 1)
    with pytest.raises(InvalidTaskArguments, match="got an unexpected keyword argument 'c'"):
        run_in_child(task, 1, 2, c=3)
    assert not retries.retryable(InvalidTaskArguments("x"))


def test_a_type_error_of_the_tasks_own_code__stays_its_own():
    with pytest.raises(TypeError, match="cannot add 1 to a str") as raised:
        run_in_child(tasks.trips_on_a_type, 1)
    assert type(raised.value) is TypeError


# --- priority -------------------------------------------------------------------------------


def test_priority__named_priorities_and_django_integers_share_one_claim_order():
    jobs.enqueue("test.noop", {"n": "low"}, priority="low")  # 50 stored: Django -50
    low_task = tasks.add.using(priority=-75).enqueue(0, 0)  # 75 stored
    normal = jobs.enqueue("test.noop", {"n": "normal"})  # 0
    high_task = tasks.add.using(priority=60).enqueue(0, 0)  # -60: between high and critical
    critical = jobs.enqueue("test.noop", {"n": "critical"}, priority="critical")  # -100
    high = jobs.enqueue("test.noop", {"n": "high"}, priority="high")  # -50
    default_task = tasks.add.enqueue(0, 0)  # 0, after the normal job (FIFO)

    order = [job.id for job in store.claim("w1", ["default"], 10)]
    first_low = Job.objects.get(payload={"n": "low"}).pk
    assert order == [
        critical.pk,
        int(high_task.id),
        high.pk,
        normal.pk,
        int(default_task.id),
        first_low,
        int(low_task.id),
    ]
    assert [Priority(value).label for value in (-100, -50, 0, 50)] == ["critical", "high", "normal", "low"]


def test_priority__the_page_names_named_priorities_and_shows_a_tasks_own():
    assert Job(priority=Priority.HIGH).priority_name == "high"
    assert Job(priority=-10).priority_name == "10"


# --- the page -------------------------------------------------------------------------------


def test_page__lists_a_task_by_its_path_shows_its_priority_and_result(client):
    client.force_login(make_operator())
    result = tasks.add.using(priority=10).enqueue(2, 3)
    claimed = claim()
    store.complete("w1", [(claimed.id, claimed.attempt)], ['{"sum": 5}'])

    listing = client.get(PAGE)
    assert ADD in listing.text
    assert f'<a href="?type={ADD}">{ADD}</a>' in listing.text  # the type filter knows the task
    page = client.get(f"{PAGE}{result.id}/change/")
    assert page.status_code == 200
    assert "&quot;sum&quot;: 5" in page.text
    assert '<div class="readonly">10</div>' in page.text  # its django.tasks priority


def test_page__cancel_and_retry_work_on_tasks(client):
    client.force_login(make_operator())
    queued = tasks.add.enqueue(1, 2)
    client.post(f"{PAGE}{queued.id}/cancel/")
    assert default_task_backend.get_result(queued.id).errors[-1].exception_class is jobs.errors.TaskCancelled

    failing = tasks.always_fails.enqueue()
    for worker in ("w1", "w2"):
        claimed = claim(worker)
        store.fail(worker, claimed.id, claimed.attempt, Failure("RuntimeError", "boom"))
        make_due(claimed.id)
    assert default_task_backend.get_result(failing.id).status == TaskResultStatus.FAILED
    client.post(f"{PAGE}{failing.id}/retry/")
    assert default_task_backend.get_result(failing.id).status == TaskResultStatus.READY


def test_get_result__of_a_task_never_tried_is_one_statement():
    result = tasks.add.enqueue(1, 2)
    with CaptureQueriesContext(connection) as read:
        fetched = default_task_backend.get_result(result.id)
    assert (fetched.status, fetched.errors) == (TaskResultStatus.READY, [])
    assert len(read.captured_queries) == 1, [query["sql"] for query in read.captured_queries]
