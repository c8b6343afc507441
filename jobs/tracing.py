"""Traces (OpenTelemetry): a request, the jobs it enqueued and their tries are one trace.

Off, it costs nothing: nothing here imports OpenTelemetry unless it is configured.

- Enqueue (``traceparent``) records the W3C trace context of the span current in the
  enqueuing process on the job's row, and only when there is one. A process that never
  imported ``opentelemetry.trace`` has no current span, so the check is a dictionary
  lookup; a project that traces its requests (its own SDK set-up, or the standard
  ``OTEL_*`` variables with ``opentelemetry-instrument``) gets the request's context.
- The worker's child (``child_tracer``) runs each try in a span ``job.run <type>`` whose
  parent is that context, so every try of a job (a retry too) is a sibling under the
  enqueuing span. Its attributes: ``job.id``, ``job.type``, ``job.queue``,
  ``job.attempt``, ``job.outcome`` and ``job.wait_ms`` (due to started); a failed try's
  span has error status and the exception event (type, message, stack trace).
- The supervisor (``span``) puts the claim and each write of the completion batch in
  spans of their own.

"Configured" is the standard environment (``configured``): the ``opentelemetry`` extra is
installed, ``OTEL_SDK_DISABLED`` is not true, and an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) or a traces
exporter (``OTEL_TRACES_EXPORTER``, not ``none``) is set. A worker process then sets up a
tracer provider exporting OTLP over HTTP in batches, unless the project set up its own.

Workflows: ``jobs.start`` records ``traceparent()`` on the workflow's row, and every job
of its steps is inserted with it (the drivers' release statements copy the column), so
each step's try span is a child of the span that started the workflow, though its job was
inserted by another step's completion, a reaper's pass or an operator's retry.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.worker.messages import JobFields
    from jobs.worker.outcome import Outcome

_OFF = ("", "none")
_provider: Any = None  # the provider this process set up, to flush at its end
_tracer: Any = None
_checked = False


def configured() -> bool:
    """Whether the standard ``OTEL_*`` environment asks for traces and the extra is there."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if exporter == "none" or (exporter in _OFF and not endpoint):
        return False
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def traceparent() -> str | None:
    """What enqueue (and ``jobs.start``) stores: the current span's context as a W3C
    ``traceparent``; None when there is none."""
    if "opentelemetry.trace" not in sys.modules:
        return None  # never imported: no span can be current, and nothing is imported here
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def tracer() -> Any:
    """This process's tracer when tracing is configured, else None (checked once)."""
    global _checked, _tracer, _provider
    if _checked:
        return _tracer
    _checked = True
    if not configured():
        return None
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the project set up none: ours, from OTEL_*
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _provider = provider
    _tracer = trace.get_tracer("jobs")
    return _tracer


def flush() -> None:
    """Export what this process's provider still holds (a child's end: no atexit there)."""
    if _provider is not None:
        with contextlib.suppress(Exception):
            _provider.force_flush(5000)


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span around what follows; nothing when tracing is off."""
    current = tracer()
    if current is None:
        return nullcontext()
    return current.start_as_current_span(name, attributes=attributes)


def record(name: str, start_ns: int, **attributes: Any) -> None:
    """A span of the supervisor's own that started at ``start_ns`` (``time.time_ns()``) and
    ends now: the claim and the completion batch, recorded once they did something, so an
    idle worker's empty claims make no spans. Nothing when tracing is off."""
    current = tracer()
    if current is not None:
        current.start_span(name, start_time=start_ns, attributes=attributes).end()


# --- the child ---------------------------------------------------------------------------


def child_tracer() -> ChildTracer | None:
    """The child's tracer of tries, or None when tracing is off."""
    current = tracer()
    return None if current is None else ChildTracer(current)


class ChildTracer:
    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def batch(self, jobs: Sequence[JobFields]) -> TracedBatch:
        """The batch's jobs with their stored trace context and wait: one read per batch,
        made only while tracing is on."""
        from jobs.models import Job

        ids = [job[0] for job in jobs]
        rows = {
            job_id: (parent, run_at, started_at)
            for job_id, parent, run_at, started_at in Job.objects.filter(pk__in=ids).values_list(
                "id", "traceparent", "run_at", "started_at"
            )
        }
        return TracedBatch(self.tracer, jobs, rows)


class TracedBatch:
    def __init__(self, tracer: Any, jobs: Sequence[JobFields], rows: dict[int, tuple[Any, Any, Any]]) -> None:
        self.tracer = tracer
        self.jobs = jobs
        self.rows = rows
        self.current: Any = None

    @contextlib.contextmanager
    def span(self, index: int) -> Iterator[None]:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        job = self.jobs[index]
        job_id, type_name, attempt, queue = job[0], job[1], job[3], job[5]
        parent, run_at, started_at = self.rows.get(job_id, (None, None, None))
        context = TraceContextTextMapPropagator().extract({"traceparent": parent}) if parent else None
        attributes: dict[str, Any] = {
            "job.id": job_id,
            "job.type": type_name,
            "job.queue": queue,
            "job.attempt": attempt,
        }
        if run_at is not None and started_at is not None:
            attributes["job.wait_ms"] = max(0.0, (started_at - run_at).total_seconds() * 1000)
        with self.tracer.start_as_current_span(
            f"job.run {type_name}",
            context=context,
            kind=trace.SpanKind.CONSUMER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as current:
            self.current = current
            try:
                yield
            finally:
                self.current = None

    def ended(self, index: int, outcome: Outcome) -> None:
        """Mark the try's span with its outcome (a failure: error status and the exception)."""
        from opentelemetry.trace import Status, StatusCode

        from jobs.worker.outcome import Kind

        current = self.current
        if current is None:
            return
        kind = outcome.kind
        name = {Kind.SUCCEEDED: "succeeded", Kind.FAILED: "failed", Kind.POSTPONED: "postponed"}.get(
            kind, "committed" if outcome.committed else "rolled back"
        )
        current.set_attribute("job.outcome", name)
        failure = outcome.failure
        if kind is Kind.FAILED and failure is not None:
            current.add_event(
                "exception",
                {
                    "exception.type": failure.error_class,
                    "exception.message": failure.message,
                    "exception.stacktrace": failure.traceback,
                },
            )
            current.set_status(Status(StatusCode.ERROR, failure.text[:500]))
