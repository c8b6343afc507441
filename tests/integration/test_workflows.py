"""Workflows on the real database, their steps run inline through the worker's code
(``jobs.testing``): chains and groups in order, results handed on, a failure cancelling
what waits for it and a retry resuming it, steps added at run time, cancel, dedupe keys,
the statements a release costs, and what ``jobs.start`` refuses."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import jobs
from jobs import registry, store, testing
from jobs.errors import InvalidJobOption, InvalidTransition, UnknownJobType
from jobs.flow import admission
from jobs.models import Job, Status, Timer, TimerSlot, Workflow, WorkflowStep
from jobs.timetable import booking
from jobs.worker.flow import FlowControl
from tests.jobs_app.models import Execution
from tests.support.job_states import claim_one, make_silent

pytestmark = pytest.mark.django_db(transaction=True)

STEP = WorkflowStep.Status


def s(value: str, **payload: object) -> jobs.Step:
    """An atomic test step named by its value."""
    return jobs.step("test.step", {"value": value, **payload}, name=value)


def steps(workflow: Workflow) -> dict[str, WorkflowStep]:
    return {row.name: row for row in WorkflowStep.objects.filter(workflow_id=workflow.pk)}


def job_of(workflow: Workflow, name: str) -> Job:
    return Job.objects.get(step__workflow_id=workflow.pk, step__name=name)


def statuses(workflow: Workflow) -> dict[str, str]:
    return {name: row.status for name, row in steps(workflow).items()}


def ran_order() -> list[str]:
    """The steps' values in the order their rows were written."""
    values = dict(Job.objects.values_list("pk", "payload__value"))
    return [values[job_id] for job_id in Execution.objects.order_by("id").values_list("job_id", flat=True)]


def test_chain__runs_each_step_after_the_previous_one_and_hands_its_result_on():
    workflow = jobs.start(jobs.chain(s("a"), s("b"), s("c")), name="three")

    assert statuses(workflow) == {"a": STEP.RELEASED, "b": STEP.WAITING, "c": STEP.WAITING}
    assert list(Job.objects.values_list("step__name", flat=True)) == ["a"]  # only released steps have a job
    drained = testing.drain()

    assert len(drained.succeeded) == 3 and ran_order() == ["a", "b", "c"]
    workflow.refresh_from_db()
    assert (workflow.status, workflow.unfinished, workflow.steps) == (Workflow.Status.SUCCEEDED, 0, 3)
    assert workflow.finished_at is not None
    results = {name: row.result for name, row in steps(workflow).items()}
    assert results == {
        "a": {"value": "a", "upstream": []},
        "b": {"value": "b", "upstream": ["a"]},
        "c": {"value": "c", "upstream": ["b"]},
    }


def test_group__its_callback_waits_for_every_member_and_reads_their_results():
    members = [s(f"m{number}") for number in range(5)]
    workflow = jobs.start(jobs.group(members, then=s("after")))

    for member in members[:4]:
        testing.run_job(job_of(workflow, member.name or ""))
        assert not Job.objects.filter(step__name="after").exists()  # one member still runs
    testing.run_job(job_of(workflow, "m4"))
    callback = job_of(workflow, "after")
    assert callback.status == Status.QUEUED

    testing.run_job(callback)
    assert steps(workflow)["after"].result == {"value": "after", "upstream": ["m0", "m1", "m2", "m3", "m4"]}
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED
    assert workflow.name == "test.step"  # the first step's type, when not named


def test_nesting__a_chain_of_groups_of_chains_keeps_every_order():
    flow = jobs.chain(
        s("first"),
        jobs.group([jobs.chain(s("x1"), s("x2")), jobs.chain(s("y1"), s("y2"))], then=s("join")),
        s("last"),
    )
    workflow = jobs.start(flow, name="nested")
    testing.drain()

    order = ran_order()
    assert order[0] == "first" and order[-2:] == ["join", "last"]
    assert order.index("x1") < order.index("x2") and order.index("y1") < order.index("y2")
    depth = {name: row.depth for name, row in steps(workflow).items()}
    assert depth == {"first": 0, "x1": 1, "y1": 1, "x2": 2, "y2": 2, "join": 3, "last": 4}
    assert steps(workflow)["join"].result["upstream"] == ["x2", "y2"]


def test_start__joins_the_callers_transaction():
    with pytest.raises(RuntimeError), transaction.atomic():
        jobs.start(jobs.chain(s("a"), s("b")), name="rolled back")
        raise RuntimeError("the caller changed its mind")
    assert not Workflow.objects.exists() and not WorkflowStep.objects.exists() and not Job.objects.exists()


def test_default_names__the_type_and_dedupe_key_numbered_where_they_repeat():
    flow = jobs.group(
        [
            jobs.step("test.step"),
            jobs.step("test.step"),
            jobs.step("test.keyed", {"thing_id": 7}),
            jobs.step("test.keyed", {"thing_id": 8}),
        ]
    )
    workflow = jobs.start(flow)
    assert sorted(steps(workflow)) == [
        "test.keyed[thing:7]",
        "test.keyed[thing:8]",
        "test.step",
        "test.step#2",
    ]


def test_results_as__the_handler_gets_the_upstream_results_as_a_keyword():
    flow = jobs.chain(s("a"), jobs.step("test.step", {"value": "b"}, name="b", results_as="upstream"))
    workflow = jobs.start(flow)
    testing.drain()
    assert steps(workflow)["b"].result["given"] == {"a": {"value": "a", "upstream": []}}


def test_a_step_that_fails_for_good__fails_the_workflow_and_cancels_what_waits_for_it(tmp_path):
    gate = tmp_path / "fixed"
    flow = jobs.chain(
        s("a"),
        jobs.group(
            [jobs.chain(s("bad", fail_unless=str(gate)), s("below")), jobs.chain(s("ok"), s("ok2"))],
            then=s("end"),
        ),
    )
    workflow = jobs.start(flow, name="failing")
    testing.drain()

    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED
    assert workflow.message.startswith("Step #2 bad failed: jobs.errors.PermanentError")
    rows = steps(workflow)
    # The branch that does not wait for it ran on; what waits for it, however far, is cancelled.
    assert {name: row.status for name, row in rows.items()} == {
        "a": STEP.SUCCEEDED,
        "bad": STEP.FAILED,
        "below": STEP.CANCELLED,
        "ok": STEP.SUCCEEDED,
        "ok2": STEP.SUCCEEDED,
        "end": STEP.CANCELLED,
    }
    assert rows["below"].message == rows["end"].message == "Upstream step #2 bad failed."
    assert job_of(workflow, "bad").status == Status.FAILED

    Path(gate).touch()
    jobs.retry(job_of(workflow, "bad"))  # the job page's Retry: the workflow resumes
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.RUNNING
    assert statuses(workflow)["below"] == statuses(workflow)["end"] == STEP.WAITING
    testing.drain()

    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED
    # Each step's row once: the failed try of the atomic step rolled its row back.
    assert Counter(ran_order()) == Counter({"a": 1, "bad": 1, "below": 1, "ok": 1, "ok2": 1, "end": 1})


def test_two_failed_members__retrying_one_leaves_the_callback_cancelled_until_the_other(tmp_path):
    gate = tmp_path / "fixed"
    workflow = jobs.start(
        jobs.group([s("x", fail_unless=str(gate)), s("y", fail_unless=str(gate)), s("z")], then=s("end"))
    )
    testing.drain()
    assert statuses(workflow) == {"x": "failed", "y": "failed", "z": "succeeded", "end": "cancelled"}

    gate.touch()
    jobs.retry_workflow(workflow)  # the workflow page's Retry: every failed step's job
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.RUNNING
    assert statuses(workflow)["end"] == STEP.WAITING
    testing.drain()
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED


def test_retrying_one_of_two_failed_steps__keeps_the_workflow_failed(tmp_path):
    gate = tmp_path / "fixed"
    workflow = jobs.start(
        jobs.group([s("x", fail_unless=str(gate)), s("y", fail_unless=str(gate))], then=s("end"))
    )
    testing.drain()
    gate.touch()

    jobs.retry(job_of(workflow, "x"))
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED
    assert statuses(workflow)["end"] == STEP.CANCELLED
    assert steps(workflow)["end"].message == "Upstream step #2 y failed."


def test_a_cancelled_step_job__fails_its_workflow():
    workflow = jobs.start(jobs.chain(s("a"), s("b")))
    jobs.cancel(job_of(workflow, "a"))

    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED
    assert statuses(workflow) == {"a": STEP.FAILED, "b": STEP.CANCELLED}
    with pytest.raises(InvalidTransition):
        jobs.retry_workflow(workflow)  # a cancelled job cannot run again


def test_a_reaped_step_with_its_budget_spent__fails_its_workflow():
    workflow = jobs.start(jobs.chain(jobs.step("test.flaky", {"fail_times": 0}, name="a"), s("b")))
    Job.objects.filter(step__name="a").update(max_attempts=1)
    claimed = claim_one("w1", "test.flaky")
    make_silent(claimed.id, 3600)

    assert store.reap().failed == 1
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED
    assert "Worker died and the retry budget is exhausted." in workflow.message
    assert statuses(workflow) == {"a": STEP.FAILED, "b": STEP.CANCELLED}


def test_steps_added_at_run_time__run_before_what_waited_for_their_adder():
    workflow = jobs.start(jobs.chain(s("scan", add=3), s("summary")), name="fan out")
    testing.run_job(job_of(workflow, "scan"))

    workflow.refresh_from_db()
    assert (workflow.steps, workflow.unfinished) == (5, 4)
    rows = steps(workflow)
    assert {rows[f"scan/{n}"].added_by for n in (1, 2, 3)} == {rows["scan"].pk}
    assert rows["summary"].pending == 3  # it waits for the three added steps now
    assert rows["summary"].depth > rows["scan/1"].depth > rows["scan"].depth
    testing.drain()

    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED
    assert steps(workflow)["summary"].result["upstream"] == ["scan", "scan/1", "scan/2", "scan/3"]
    assert ran_order().index("summary") == 4


def test_steps_added_again_by_a_retried_plain_step__are_added_once():
    workflow = jobs.start(jobs.step("test.step_plain", {"value": "scan"}, name="scan"))
    step_id = steps(workflow)["scan"].pk
    WorkflowStep.objects.filter(pk=step_id).update(status=STEP.RELEASED)
    from jobs.workflow import progress

    first = progress.add(step_id, [s("one"), s("two")])
    again = progress.add(step_id, [s("one"), s("two")])
    assert first == again
    workflow.refresh_from_db()
    assert workflow.steps == 3
    with pytest.raises(InvalidJobOption, match="already has steps named one"):
        progress.add(step_id, [s("one"), s("three")])


def test_cancel__cancels_waiting_steps_and_queued_jobs_and_waits_out_a_running_one():
    workflow = jobs.start(jobs.chain(jobs.group([s("a"), s("b")]), s("c")))
    running = claim_one(testing.WORKER, "test.step")  # a: claimed, as a worker would

    cancelled = jobs.cancel_workflow(workflow)
    assert cancelled.status == Workflow.Status.CANCELLED
    rows = steps(workflow)
    assert (rows["b"].status, rows["c"].status) == (STEP.CANCELLED, STEP.CANCELLED)
    assert Job.objects.get(step__name="b").status == Status.CANCELLED
    assert rows["a"].status == STEP.RELEASED  # running: waited out

    testing.run_claimed(running, testing.WORKER)
    assert statuses(workflow)["a"] == STEP.SUCCEEDED
    workflow.refresh_from_db()
    assert (workflow.status, workflow.unfinished) == (Workflow.Status.CANCELLED, 2)
    assert not Job.objects.filter(step__name="c").exists()  # nothing follows a cancelled workflow
    with pytest.raises(InvalidTransition, match="Only a running or failed workflow"):
        jobs.cancel_workflow(workflow)


def test_workflow_dedupe_key__a_running_workflow_of_the_key_is_returned():
    first = jobs.start(s("a"), name="provision", dedupe_key="workspace:1")
    again = jobs.start(s("a"), name="provision", dedupe_key="workspace:1")
    other = jobs.start(s("a"), name="provision", dedupe_key="workspace:2")

    assert again.pk == first.pk and other.pk != first.pk
    assert list(jobs.workflows_for("provision", dedupe_key="workspace:1")) == [first]
    testing.drain()
    assert jobs.start(s("a"), name="provision", dedupe_key="workspace:1").pk != first.pk  # it ended


def test_a_step_whose_dedupe_key_is_held__waits_for_it_and_is_released_by_the_reaper():
    holder = jobs.enqueue("test.keyed", {"thing_id": 7})
    workflow = jobs.start(jobs.chain(jobs.step("test.keyed", {"thing_id": 7}, name="keyed"), s("after")))

    assert statuses(workflow)["keyed"] == STEP.RELEASED
    assert not Job.objects.filter(step__isnull=False).exists()  # the key is held: no job yet
    store.reap()
    assert not Job.objects.filter(step__isnull=False).exists()

    testing.run_job(holder)
    store.reap()  # the key is free: the step's job is added
    step_job = job_of(workflow, "keyed")
    assert (step_job.status, step_job.dedupe_key) == (Status.QUEUED, "thing:7")
    testing.drain()
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED


def _claim_as_a_worker(worker: str) -> list[store.ClaimedJob]:
    """What a worker's claim of the default queue takes: "default" holds limited types beside
    others, so its jobs with limit keys go through flow control, the rest through the plain
    claim (``jobs.worker.flow``)."""
    assert FlowControl(1.0).split(["default"]).mixed == ["default"]
    rules = admission.Rules(queues={}, type_limits=registry.limits_of)
    flowed = store.claim_flowed(worker, ["default"], 10, rules, keyed_only=True).jobs
    return flowed + store.claim(worker, ["default"], 10, unkeyed=True)


def test_a_steps_type_limit__holds_its_steps_and_the_others_wait_queued_without_an_attempt():
    members = [jobs.step("test.step_limited", {"value": name}, name=name) for name in ("a", "b", "c")]
    workflow = jobs.start(jobs.group(members, then=s("after")))  # test.step_limited: concurrency=1

    ran = []
    for _ in members:
        (claimed,) = _claim_as_a_worker("w1")  # one at a time, though three are due
        assert _claim_as_a_worker("w2") == []  # not even by another worker while it runs
        waiting = Job.objects.filter(step__workflow_id=workflow.pk, status=Status.QUEUED)
        assert {(job.attempts, job.locked_by) for job in waiting} <= {(0, None)}  # queued, untried
        ran.append(Job.objects.get(pk=claimed.id).step.name)
        assert testing.run_claimed(claimed, "w1").status == Status.SUCCEEDED  # its slot frees
    assert sorted(ran) == ["a", "b", "c"]
    assert statuses(workflow)["after"] == STEP.RELEASED

    (callback,) = _claim_as_a_worker("w1")  # not limited: released once a, b and c succeeded
    testing.run_claimed(callback, "w1")
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED
    assert ran_order() == [*ran, "after"]


def test_a_timers_run__starts_a_workflow_whose_steps_then_run_in_order():
    timer = "test.starts_workflow"  # every minute, installed paused; its run starts three steps
    t0 = datetime(2027, 1, 5, 12, 0, tzinfo=UTC)
    Timer.objects.exclude(name=timer).update(enabled=False)  # the tick books this timer alone
    Timer.objects.filter(name=timer).update(enabled=True, last_slot=t0)  # resumed, t0 booked

    (booked,) = booking.book_due(t0 + timedelta(seconds=61))
    assert (booked.timer, booked.slot, booked.outcome) == (timer, t0 + timedelta(minutes=1), "enqueued")
    run = testing.run_job(booked.job_id)  # the slot's run, as a worker's child runs it

    assert run.status == Status.SUCCEEDED
    (workflow,) = Workflow.objects.all()
    assert (workflow.name, workflow.dedupe_key) == ("test.timer_flow", "slot:2027-01-05T12:01:00Z")
    assert statuses(workflow) == {"fetch": STEP.RELEASED, "derive": STEP.WAITING, "publish": STEP.WAITING}
    slot = TimerSlot.objects.get(timer__name=timer, slot=booked.slot)
    assert slot.outcome == TimerSlot.Outcome.SUCCEEDED and f"workflow #{workflow.pk}" in slot.result

    drained = testing.drain()
    assert len(drained.succeeded) == 3 and not drained.failed
    assert ran_order() == ["fetch", "derive", "publish"]
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED


def test_every_step_job__carries_the_trace_context_the_workflow_started_in(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider

    gate = tmp_path / "fixed"
    holder = jobs.enqueue("test.keyed", {"thing_id": 7})  # its key makes a step wait
    tracer = TracerProvider().get_tracer("test")  # this test's own, not the global one
    with tracer.start_as_current_span("POST /provision") as request:
        workflow = jobs.start(
            jobs.chain(
                jobs.group(
                    [s("scan", add=2), jobs.step("test.keyed", {"thing_id": 7}, name="keyed")],
                    then=s("bad", fail_unless=str(gate)),
                ),
                s("end"),
            )
        )
    untraced = jobs.start(jobs.chain(s("x"), s("y")))
    context = request.get_span_context()
    parent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    testing.run_job(holder)
    testing.drain()  # scan adds scan/1 and scan/2, each released by scan's completion
    store.reap()  # the key is free: keyed's job is added by the reaper's pass
    testing.drain()  # bad fails for good
    gate.touch()
    jobs.retry(job_of(workflow, "bad"))  # it resumes: end is released by bad's completion
    testing.drain()

    workflow.refresh_from_db()
    assert (workflow.status, workflow.traceparent) == (Workflow.Status.SUCCEEDED, parent)
    carried = dict(Job.objects.filter(step__workflow_id=workflow.pk).values_list("step__name", "traceparent"))
    assert carried == dict.fromkeys(["scan", "keyed", "scan/1", "scan/2", "bad", "end"], parent)
    untraced.refresh_from_db()
    assert untraced.traceparent is None  # no span was current: nothing stored, nothing copied
    assert set(Job.objects.filter(step__workflow_id=untraced.pk).values_list("traceparent", flat=True)) == {
        None
    }
    assert Job.objects.filter(step__workflow_id=untraced.pk).count() == 2


def test_step_options__priority_and_delay_reach_the_job():
    before = timezone.now()
    workflow = jobs.start(jobs.step("test.step", {"value": "later"}, priority="high", delay=60))
    job = job_of(workflow, "test.step")
    assert job.priority_name == "high"
    assert before + timedelta(seconds=59) <= job.run_at <= timezone.now() + timedelta(seconds=61)
    assert (job.queue, job.max_attempts) == ("default", 10)  # the registry's, always


def test_releasing_successors__costs_the_same_statements_for_three_and_for_three_hundred():
    counts = []
    for width in (3, 300):
        workflow = jobs.start(
            jobs.chain(s(f"head{width}"), jobs.group([s(f"w{width}-{n}") for n in range(width)]))
        )
        claimed = store.claim_job(testing.WORKER, job_of(workflow, f"head{width}").pk)
        with CaptureQueriesContext(connection) as queries:
            testing.run_claimed(claimed, testing.WORKER)
        counts.append(len(queries))
        assert Job.objects.filter(step__workflow_id=workflow.pk, status=Status.QUEUED).count() == width
    assert counts[0] == counts[1]


def test_start__is_a_few_bulk_statements_whatever_the_size():
    with CaptureQueriesContext(connection) as queries:
        jobs.start(jobs.group([s(f"m{n}") for n in range(3_000)], then=s("end")))
    assert len(queries) <= 12
    assert Job.objects.count() == 3_000


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda: jobs.chain(), InvalidJobOption, "empty chain"),
        (lambda: jobs.group([]), InvalidJobOption, "empty group"),
        (lambda: jobs.group(s("a")), InvalidJobOption, "takes a list"),
        (lambda: jobs.chain(s("a"), "b"), InvalidJobOption, "holds steps"),
        (lambda: jobs.step("no.such.type"), UnknownJobType, "no.such.type"),
        (lambda: jobs.step("test.step", {"value": "\x00"}), jobs.InvalidPayload, "NUL"),
        (lambda: jobs.step("test.step", delay=-1), InvalidJobOption, "delay"),
        (lambda: jobs.step("test.step", results_as="not a name"), InvalidJobOption, "keyword"),
        (lambda: jobs.step("test.step", name=""), InvalidJobOption, "name"),
        (lambda: jobs.start(jobs.chain(s("a"), s("a"))), InvalidJobOption, "Two steps are named 'a'"),
        (lambda: jobs.start("test.step"), InvalidJobOption, "Start a step"),
    ],
)
def test_refused__before_anything_is_written(build, error, match):
    with pytest.raises(error, match=match):
        build()
    assert not Workflow.objects.exists()


def test_refused__a_workflow_larger_than_the_setting(settings):
    settings.JOBS_WORKFLOW_MAX_STEPS = 100
    with pytest.raises(InvalidJobOption, match="at most 100 steps"):
        jobs.start(jobs.group([s(f"m{n}") for n in range(101)]))
    # 80 steps, but a group after a group joins each to each: 1,600 edges.
    with pytest.raises(InvalidJobOption, match="at most 1,000 edges"):
        jobs.start(
            jobs.chain(
                jobs.group([s(f"a{n}") for n in range(40)]), jobs.group([s(f"b{n}") for n in range(40)])
            )
        )


def test_a_step_returning_what_is_not_json__fails_for_good():
    workflow = jobs.start(jobs.step("test.returns_object", name="x"))
    done = testing.run_job(job_of(workflow, "x"))
    assert (done.status, done.attempts) == (Status.FAILED, 1)
    assert "returned a value its successors cannot read" in done.error
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED


def test_prune__removes_finished_workflows_and_keeps_a_failed_one_while_its_job_is_kept(tmp_path):
    done = jobs.start(s("a"))
    failed = jobs.start(s("b", fail_unless=str(tmp_path / "never")))
    testing.drain()
    Workflow.objects.update(finished_at=timezone.now() - timedelta(days=30))

    kept = job_of(done, "a")
    store.prune()
    assert list(Workflow.objects.values_list("pk", flat=True)) == [failed.pk]
    assert not WorkflowStep.objects.filter(workflow_id=done.pk).exists()
    kept.refresh_from_db()
    assert kept.step_id is None  # the job outlives its workflow, without the step it ran
    jobs.dismiss(job_of(failed, "b"))
    Job.objects.update(dismissed_at=timezone.now() - timedelta(days=30))
    store.prune()
    assert not Workflow.objects.exists()


def test_a_django_task__is_a_step_on_its_queue_with_its_result():
    from tests.tasks_backend import tasks

    flow = jobs.chain(
        jobs.step(tasks.add, {"args": [2, 3], "kwargs": {}}, name="sum"),
        jobs.step(tasks.report, {"args": [], "kwargs": {}}, name="report"),
    )
    workflow = jobs.start(flow)
    assert job_of(workflow, "sum").queue == "default"
    testing.drain()

    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.SUCCEEDED
    assert steps(workflow)["sum"].result == 5
    report = job_of(workflow, "report")
    assert report.queue == "reports"  # the task's own queue
    assert tasks.add.get_result(str(job_of(workflow, "sum").pk)).return_value == 5
