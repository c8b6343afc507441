"""The capture of a try's log (``jobs.try_log``): bounded in lines and bytes with the cut
said where it happened, cleaned, nothing kept outside a try, and the old levels of the
process's other handlers kept."""

from __future__ import annotations

import io
import logging
import multiprocessing

from jobs import try_log


def _capture(lines: int = 10, size: int = 10_000, live: bool = False) -> try_log.Capture:
    slot = try_log.LiveSlot(multiprocessing.get_context(), 200) if live else None
    return try_log.Capture(logging.INFO, lines, size, slot)


def _emit(capture: try_log.Capture, message: str, level: int = logging.INFO) -> None:
    capture.handle(logging.LogRecord("app", level, __file__, 1, message, None, None))


def test_a_try_that_logs_nothing_has_no_log_and_lines_outside_a_try_are_not_kept():
    capture = _capture()
    _emit(capture, "before any try")
    capture.start(1, 1)
    assert capture.finish() is None
    _emit(capture, "between tries")
    capture.start(2, 1)
    _emit(capture, "mine")
    log = capture.finish()
    assert log is not None and log.lines == 1 and "mine" in log.text and "between" not in log.text


def test_past_the_line_budget_the_head_and_the_last_lines_are_kept_and_the_cut_is_said():
    capture = _capture(lines=10)
    capture.start(1, 1)
    for number in range(100):
        _emit(capture, f"line {number}")
    log = capture.finish()
    assert log is not None
    kept = [line.rsplit(" ", 1)[-1] for line in log.text.splitlines() if "INFO app: line" in line]
    assert kept == [str(n) for n in (0, 1, 2, 3, 4, 95, 96, 97, 98, 99)]
    assert log.lines == 100
    assert log.cut.startswith("90 of 100 lines left out after line 5")
    assert f"[… {log.cut} …]" in log.text.splitlines()[5]


def test_the_byte_budget_bounds_the_text_too():
    capture = _capture(lines=1000, size=2000)
    capture.start(1, 1)
    for number in range(200):
        _emit(capture, f"line {number} " + "x" * 50)
    log = capture.finish()
    assert log is not None and log.cut
    assert len(log.text.encode()) < 2000 + 300  # the budget and the cut's own line
    assert "line 199" in log.text.splitlines()[-1]  # the newest line is kept


def test_lines_are_cleaned_as_outside_text_and_cut_at_their_own_length():
    capture = _capture()
    capture.start(1, 1)
    _emit(capture, "nul\x00 colour \x1b[31mred\x1b[0m surrogate \udc80 tab\tend")
    _emit(capture, "y" * 5000)
    log = capture.finish()
    assert log is not None
    first, second = log.text.splitlines()
    assert first.endswith("nul colour red surrogate \ufffd tab\tend")
    assert len(second) <= try_log.LINE_CHARS


def test_the_live_slot_holds_the_running_try_so_far():
    capture = _capture(live=True)
    capture.start(7, 2)
    _emit(capture, "first")
    sequence, job_id, attempt, text = capture.live.read()
    assert (job_id, attempt) == (7, 2) and "first" in text and sequence == 1
    for _ in range(20):
        _emit(capture, "more and more")
    assert len(capture.live.read()[3].encode()) <= 200  # the slot's size bounds it


def test_install_keeps_what_the_other_handlers_printed_before():
    root = logging.getLogger()
    old_level, old_handlers = root.level, list(root.handlers)
    printed = io.StringIO()
    console = logging.StreamHandler(printed)
    root.handlers = [console]
    root.setLevel(logging.WARNING)
    chatty = logging.getLogger("tests.explicitly.debug")
    chatty.setLevel(logging.DEBUG)
    try:
        capture = try_log.install("INFO", 100, 10_000)
        capture.start(1, 1)
        logging.getLogger("tests.quiet").info("an info line: captured, not printed")
        logging.getLogger("tests.quiet").warning("a warning: both")
        chatty.debug("a debug line its own logger enables: printed as before")
        log = capture.finish()
    finally:
        root.handlers = old_handlers
        root.setLevel(old_level)
        chatty.setLevel(logging.NOTSET)
    assert log is not None and "an info line" in log.text and "a warning" in log.text
    assert "a debug line" not in log.text  # below JOBS_TRY_LOG_LEVEL
    assert "an info line" not in printed.getvalue()
    assert "a warning" in printed.getvalue() and "a debug line" in printed.getvalue()


def test_tracing_is_off_without_the_otel_environment_and_stores_no_context(monkeypatch):
    from jobs import tracing

    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing.configured()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert tracing.configured()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not tracing.configured()
    assert tracing.traceparent() is None  # no span current: nothing to store
