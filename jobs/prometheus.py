"""The fleet's scaling signals in Prometheus' exposition format, for teams not on AWS.

A custom collector reads ``jobs.metrics.measure()`` at scrape time, so any web process can
serve the endpoint and every process reports the same numbers: nothing is counted in
memory. All metrics are gauges labelled by ``queue`` (``jobs_workers_live`` has no label):

    jobs_due{queue}                       due queued jobs
    jobs_oldest_due_age_seconds{queue}    seconds the oldest due job has waited (0: none)
    jobs_running{queue}                   running jobs
    jobs_failed_recent{queue}             jobs that failed for good in the last
                                          JOBS_METRICS_WINDOW seconds
    jobs_backlog_per_task{queue}          due jobs ÷ live workers serving the queue (≥ 1)
    jobs_workers_serving{queue}           live workers that serve the queue
    jobs_unserved_due{queue}              due jobs of a queue no live worker serves (alarm > 0;
                                          0 for a paused queue)
    jobs_queue_paused{queue}              1 while an operator has paused the queue
    jobs_workers_live                     live workers
    jobs_timer_overdue{timer}             1 while the timer's last successful slot is older
                                          than its two latest slots (jobs.timetable.health)
    jobs_timer_last_success_age_seconds{timer}  seconds since its last successful slot
                                          (or since it was installed, never run)

From the rollup of finished tries (``jobs.rollup``: one grouped read of its minute rows),
over the same window:

    jobs_finished_recent{queue,outcome}   tries finished (succeeded, retried, failed)
    jobs_wait_seconds{queue}              gauge histogram of the tries' waits (due → started)
    jobs_run_seconds{queue}               gauge histogram of their run times

The histograms' buckets are every second octave from 1 ms (``le`` 0.001, 0.004, 0.016, …,
about 4,194 s, +Inf), exact sums of the rollup's own buckets; ``histogram_quantile`` reads
them, and ``_gsum`` is estimated from the buckets' middles (within 9 %).

Failures are a gauge over a window, not a ``jobs_failed_total`` counter: a counter must
never go down, and the table it would be counted from does (an operator retries or
dismisses a failed job), while a counter kept in memory would live in the workers, which
are not scraped and restart at every deploy. The window is the one CloudWatch's
``FailedJobs`` uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from jobs import metrics, rollup
from jobs.conf import jobs_settings
from jobs.timetable import health


@dataclass(frozen=True)
class _Gauge:
    name: str
    help: str
    by_queue: Callable[[metrics.Figures, str], float] | None = None
    overall: Callable[[metrics.Figures], float] | None = None

    def family(self, figures: metrics.Figures | None) -> GaugeMetricFamily:
        labels = ["queue"] if self.by_queue else None
        family = GaugeMetricFamily(self.name, self.help, labels=labels)
        if figures is None:
            return family
        if self.by_queue:
            for queue in figures.queues:
                family.add_metric([queue], self.by_queue(figures, queue))
        elif self.overall:
            family.add_metric([], self.overall(figures))
        return family


GAUGES = (
    _Gauge("jobs_due", "Queued jobs that are due now.", by_queue=lambda f, q: f.queued.get(q, 0)),
    _Gauge(
        "jobs_oldest_due_age_seconds",
        "Seconds since the oldest due job became due (0 when none is due).",
        by_queue=lambda f, q: f.oldest_due_age(q),
    ),
    _Gauge("jobs_running", "Running jobs.", by_queue=lambda f, q: f.running.get(q, 0)),
    _Gauge(
        "jobs_failed_recent",
        "Jobs that failed for good within the last JOBS_METRICS_WINDOW seconds.",
        by_queue=lambda f, q: f.failed.get(q, 0),
    ),
    _Gauge(
        "jobs_backlog_per_task",
        "Due jobs per live worker serving the queue (divisor at least 1).",
        by_queue=lambda f, q: f.per_task_of(q),
    ),
    _Gauge(
        "jobs_workers_serving",
        "Live workers that serve the queue.",
        by_queue=lambda f, q: f.serving.get(q, 0),
    ),
    _Gauge(
        "jobs_unserved_due",
        "Due jobs of a queue that no live worker serves (0 while one does): they wait forever.",
        by_queue=lambda f, q: f.unserved(q),
    ),
    _Gauge(
        "jobs_queue_paused",
        "1 while an operator has paused the queue: its due jobs wait until it is resumed.",
        by_queue=lambda f, q: int(q in f.paused),
    ),
    _Gauge(
        "jobs_workers_live",
        "Workers that renewed their registry row within JOBS_WORKER_LEASE and have not stopped.",
        overall=lambda f: f.live_workers,
    ),
)


class JobsCollector(Collector):
    """Measures on every scrape; ``describe`` names the metrics without touching the database."""

    def describe(self) -> Iterator[Metric]:
        for gauge in GAUGES:
            yield gauge.family(None)
        yield from _timer_families([])
        yield from _rollup_families(None)

    def collect(self) -> Iterator[Metric]:
        figures = metrics.measure()
        for gauge in GAUGES:
            yield gauge.family(figures)
        yield from _timer_families(health.timer_states())
        since = timezone.now() - timedelta(seconds=jobs_settings.METRICS_WINDOW)
        yield from _rollup_families(rollup.recent(since))


#: The rollup buckets whose upper bounds are the histograms' ``le``: every second octave.
HISTOGRAM_BUCKETS = tuple(range(0, rollup.LAST_BUCKET, 2 * rollup.BUCKETS_PER_OCTAVE))
_HISTOGRAMS = {
    rollup.WAIT: ("jobs_wait_seconds", "Waits (due to started) of the tries finished in the window."),
    rollup.RUN: ("jobs_run_seconds", "Run times of the tries finished in the window."),
}


def _rollup_families(recent: rollup.Recent | None) -> Iterator[Metric]:
    finished = GaugeMetricFamily(
        "jobs_finished_recent",
        "Tries finished within the last JOBS_METRICS_WINDOW seconds, by outcome.",
        labels=["queue", "outcome"],
    )
    histograms = {
        measure: GaugeHistogramMetricFamily(name, text, labels=["queue"])
        for measure, (name, text) in _HISTOGRAMS.items()
    }
    if recent is not None:
        for (queue, outcome), count in sorted(recent.finished.items()):
            finished.add_metric([queue, outcome], count)
        for (queue, measure), histogram in sorted(recent.histograms.items()):
            buckets = [
                (f"{rollup.upper_bound(index):g}", float(histogram.up_to(index)))
                for index in HISTOGRAM_BUCKETS
            ]
            buckets.append(("+Inf", float(histogram.total)))
            histograms[measure].add_metric([queue], buckets, histogram.estimated_sum())
    yield finished
    yield from histograms.values()


def _timer_families(states: list[health.TimerState]) -> Iterator[Metric]:
    overdue = GaugeMetricFamily(
        "jobs_timer_overdue",
        "1 while the timer's last successful slot is older than its two latest slots: it missed its runs.",
        labels=["timer"],
    )
    age = GaugeMetricFamily(
        "jobs_timer_last_success_age_seconds",
        "Seconds since the timer's last successful slot (since its installation when none succeeded).",
        labels=["timer"],
    )
    for state in states:
        overdue.add_metric([state.name], float(state.overdue))
        age.add_metric([state.name], state.age)
    yield overdue
    yield age


registry = CollectorRegistry(auto_describe=False)
registry.register(JobsCollector())


def exposition(accept: str = "") -> tuple[bytes, str]:
    """The scrape body and its content type (OpenMetrics when the scraper asks for it)."""
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
