"""Each try's log on a job's page (``jobs.try_log``): under its try, and the last lines
before the error in the failed attempts list. A running job's page refreshes its log in
place (the rows are written live at the progress interval).

The logs are bounded when they are written (``JOBS_TRY_LOG_LINES``, ``JOBS_TRY_LOG_BYTES``),
and a job has at most its attempts' worth of them, so the page reads them whole; they are
escaped like any text on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.models import Job, JobAttempt, TryLog

#: How many of a failed try's last log lines its entry in the failed attempts list shows.
LINES_BEFORE_ERROR = 10


@dataclass(frozen=True)
class ShownLog:
    """One try's log as the page shows it."""

    attempt: int  # numbered across the job's life, as ``JobAttempt.attempt``
    text: str
    lines: int
    cut: str
    live: bool  # the try is still running: more may come

    def tail(self, count: int = LINES_BEFORE_ERROR) -> str:
        return "\n".join(self.text.splitlines()[-count:])


def logs_of(job: Job) -> list[ShownLog]:
    """The job's tries' logs, oldest try first (one indexed read)."""
    rows = TryLog.objects.filter(job_id=job.pk).only("attempt", "earlier", "text", "lines", "cut")
    running_try = job.attempts if job.status == "running" else None
    shown = [
        ShownLog(
            row.life_attempt(job.earlier_attempts),
            row.text,
            row.lines,
            row.cut,
            live=row.earlier == TryLog.CURRENT and row.attempt == running_try,
        )
        for row in rows
    ]
    return sorted(shown, key=lambda log: log.attempt)


def tail_of(attempt: JobAttempt) -> str:
    """The last lines the failed try ``attempt`` logged ("" if none): a try's own page."""
    job = Job.objects.filter(pk=attempt.job_id).only("earlier_attempts", "attempts", "status").first()
    if job is None:
        return ""
    for log in logs_of(job):
        if log.attempt == attempt.attempt:
            return log.tail()
    return ""


def attach(attempts: list[JobAttempt], logs: list[ShownLog]) -> None:
    """Give each failed try of the list the last lines its handler logged (``log_tail``)."""
    by_attempt = {log.attempt: log for log in logs}
    for attempt in attempts:
        log = by_attempt.get(attempt.attempt)
        attempt.log_tail = log.tail() if log is not None else ""  # type: ignore[attr-defined]
