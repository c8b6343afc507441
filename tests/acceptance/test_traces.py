"""Traces across a real worker process (``jobs.tracing``): the workers export OTLP over
HTTP to a receiver this test starts (pytest-httpserver decoding the protobuf
``ExportTraceServiceRequest``). A "request" span of this process enqueues the jobs; their
tries' spans are its children in the same trace, a retried job's tries are siblings, a
failed try's span carries error status and the exception event, and the supervisor's claim
and completion batch have spans of their own. A workflow started in that span continues it:
each step's try is its child too, though only the first step's job was inserted by it (the
others by the completions of the steps before them, in the worker)."""

from __future__ import annotations

import gzip
import threading

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from werkzeug import Request, Response

import jobs
from jobs import store
from jobs.models import Job, Status, Workflow
from tests.support.job_states import wait_status
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


class Receiver:
    """The spans the workers exported, as protobuf messages."""

    def __init__(self) -> None:
        self.spans: list = []
        self.lock = threading.Lock()

    def handle(self, request: Request) -> Response:
        body = request.get_data()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        with self.lock:
            for resource_spans in message.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend(scope_spans.spans)
        return Response(b"", status=200, content_type="application/x-protobuf")

    def named(self, prefix: str) -> list:
        with self.lock:
            return [span for span in self.spans if span.name.startswith(prefix)]


def test_traces__the_enqueuing_span_parents_every_try_and_workflow_step_retries_are_siblings(
    start_worker, httpserver
):
    receiver = Receiver()
    httpserver.expect_request("/v1/traces", method="POST").respond_with_handler(receiver.handle)
    tracer = TracerProvider().get_tracer("test")  # this process's own, not the global one
    with tracer.start_as_current_span("POST /orders") as request_span:
        flaky = store.enqueue("test.flaky", {"fail_times": 1})
        quiet = store.enqueue("test.noop", {})
        names = ("first", "second", "left", "right")
        step = {name: jobs.step("test.noop", {"step": name}, name=name) for name in names}
        workflow = jobs.start(
            jobs.chain(step["first"], step["second"], jobs.group([step["left"], step["right"]]))
        )
    untraced = store.enqueue("test.noop", {"outside": True})
    request = request_span.get_span_context()
    assert (
        Job.objects.get(pk=flaky.pk).traceparent
        == f"00-{request.trace_id:032x}-{request.span_id:016x}-{int(request.trace_flags):02x}"
    )
    assert Job.objects.get(pk=untraced.pk).traceparent is None  # no span current: nothing stored

    start_worker(
        "--concurrency",
        "1",
        "--poll-interval",
        "0.1",
        env={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": httpserver.url_for("/v1/traces"),
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "jobs-worker",
        },
    )
    for job in (flaky, quiet, untraced):
        wait_status(job.pk, Status.SUCCEEDED, timeout=60)
    wait_for(lambda: Workflow.objects.get(pk=workflow.pk).status == Workflow.Status.SUCCEEDED, timeout=60)
    tries = wait_for(lambda: len(receiver.named("job.run")) >= 8 and receiver.named("job.run"), timeout=30)

    def attributes(span) -> dict:
        return {item.key: _value(item.value) for item in span.attributes}

    by_job: dict[int, list] = {}
    for span in tries:
        by_job.setdefault(attributes(span)["job.id"], []).append(span)
    flaky_tries = sorted(by_job[flaky.pk], key=lambda span: attributes(span)["job.attempt"])
    assert [attributes(span)["job.outcome"] for span in flaky_tries] == ["failed", "succeeded"]
    steps = dict(Job.objects.filter(step__workflow_id=workflow.pk).values_list("step__name", "pk"))
    assert set(steps) == set(names)
    step_tries = [span for name in names for span in by_job[steps[name]]]
    assert len(step_tries) == 4  # one try each
    for span in [*flaky_tries, *by_job[quiet.pk], *step_tries]:
        assert span.trace_id.hex() == f"{request.trace_id:032x}"  # the request's trace
        assert span.parent_span_id.hex() == f"{request.span_id:016x}"  # siblings under it
        assert span.name in ("job.run test.flaky", "job.run test.noop")
        assert {"job.type", "job.queue", "job.attempt", "job.wait_ms"} <= set(attributes(span))
    failed = flaky_tries[0]
    assert failed.status.code == ERROR
    event = next(event for event in failed.events if event.name == "exception")
    detail = {item.key: _value(item.value) for item in event.attributes}
    assert detail["exception.type"] == "ConnectionError" and "Traceback" in detail["exception.stacktrace"]
    assert flaky_tries[1].status.code != ERROR
    (alone,) = by_job[untraced.pk]
    assert (
        alone.trace_id.hex() != f"{request.trace_id:032x}" and not alone.parent_span_id
    )  # a trace of its own
    wait_for(lambda: receiver.named("jobs.claim") and receiver.named("jobs.complete"), timeout=30)


def _value(value):
    return getattr(value, value.WhichOneof("value"))
