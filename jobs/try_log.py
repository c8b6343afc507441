"""Each try's own log: what a handler logs (the standard ``logging`` module, any logger, at
``JOBS_TRY_LOG_LEVEL`` and above) while the worker's child runs its try, kept with that try.

A ``Capture`` is a handler on the root logger of the child process, installed once; it keeps
lines only while a try runs (``start`` … ``finish``), so a try that logs nothing costs two
attribute writes and stores nothing (no row, no statement). What it keeps is bounded by
``JOBS_TRY_LOG_LINES`` and ``JOBS_TRY_LOG_BYTES``: past either, the first half of the budget
and the last lines are kept (the lines before an error matter most), and a line in the text
says where and how much was cut. Every line is cleaned as outside text is before it is
stored (no NUL, lone surrogates replaced, no terminal control characters), and a line
longer than ``LINE_CHARS`` is cut.

While the try runs, each kept line is also appended to the child's live slot in shared
memory (``LiveSlot``), which the supervisor writes to the try's row at the progress
interval, so a running job's log shows on its page as its progress does. The live copy
holds the first ``JOBS_TRY_LOG_BYTES``; the whole (cut) log replaces it when the try ends.

Capturing INFO lines must not make the child print them where it printed none: lowering
the root logger's level for the capture would, so the handlers that were there before get
a filter that drops exactly the records the old levels dropped (``_KeepOldLevels``).
"""

from __future__ import annotations

import logging
import re
from collections import deque
from typing import Any, NamedTuple

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LINE_CHARS = 2000  # one log line at most (a dumped payload, say)
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# A terminal's escape sequences (colours, cursor moves), then every other C0 control but
# tab and newline.
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` as a text column stores it and a page shows it: no NUL nor other control
    characters (an ANSI colour code, say) but tab and newline, lone surrogates as U+FFFD."""
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    return _CONTROL.sub("", text)


class Log(NamedTuple):
    """One try's log as stored: the text, how many lines the handler logged, where it was cut."""

    text: str
    lines: int
    cut: str  # "" when nothing was left out

    def tail(self, count: int) -> str:
        return "\n".join(self.text.splitlines()[-count:])


class LiveSlot:
    """The running try's log so far, shared by a child with its supervisor: append-only
    bytes up to ``size``, behind a lock, with a sequence number that says it changed."""

    def __init__(self, context: Any, size: int) -> None:  # a multiprocessing context
        self._lock = context.Lock()
        self._numbers = context.RawArray("q", 4)  # sequence, job id, attempt, length
        self._text = context.RawArray("c", size)
        self.size = size
        self.written = 0  # the sequence last written to a row: the supervisor's own copy

    def begin(self, job_id: int, attempt: int) -> None:
        with self._lock:
            numbers = self._numbers
            numbers[1], numbers[2], numbers[3] = job_id, attempt, 0

    def append(self, data: bytes) -> None:
        with self._lock:
            numbers = self._numbers
            length = numbers[3]
            room = self.size - length
            if room <= 0:
                return
            data = data[:room]
            self._text[length : length + len(data)] = data
            numbers[3] = length + len(data)
            numbers[0] += 1

    @property
    def sequence(self) -> int:
        return self._numbers[0]

    def read(self) -> tuple[int, int, int, str]:
        """Sequence, job id, attempt and the text so far. A child killed while it held the
        lock never releases it: after a moment the slot is read without it (an append cut
        in the middle costs a character, not the supervisor)."""
        held = self._lock.acquire(timeout=0.5)
        try:
            sequence, job_id, attempt, length = self._numbers[:]
            text = bytes(self._text[: max(0, min(length, self.size))]).decode("utf-8", "replace")
        finally:
            if held:
                self._lock.release()
        return sequence, job_id, attempt, text


class Capture(logging.Handler):
    """The child's capture of its tries' logs (see the module docstring)."""

    def __init__(self, level: int, max_lines: int, max_bytes: int, live: LiveSlot | None = None) -> None:
        super().__init__(level)
        self.setFormatter(logging.Formatter(FORMAT))
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.live = live
        self.active = False
        self.try_of = (0, 0)
        self._reset()

    def _reset(self) -> None:
        self.head: list[str] = []
        self.tail: deque[str] = deque()
        self.head_bytes = self.tail_bytes = 0
        self.seen = 0  # lines logged during the try, kept or not

    # --- one try ---

    def start(self, job_id: int, attempt: int) -> None:
        if self.seen:
            self._reset()
        self.try_of = (job_id, attempt)  # the live slot is claimed at the first line only
        self.active = True

    def finish(self) -> Log | None:
        """The try's log; None when the handler logged nothing."""
        self.active = False
        if not self.seen:
            return None
        kept = len(self.head) + len(self.tail)
        left_out = self.seen - kept
        lines = self.head
        cut = ""
        if left_out:
            cut = (
                f"{left_out} of {self.seen} lines left out after line {len(self.head)} "
                f"(JOBS_TRY_LOG_LINES={self.max_lines}, JOBS_TRY_LOG_BYTES={self.max_bytes})"
            )
            lines = [*self.head, f"[… {cut} …]"]
        text = "\n".join([*lines, *self.tail])
        log = Log(text, self.seen, cut)
        self._reset()
        return log

    # --- logging.Handler ---

    def emit(self, record: logging.LogRecord) -> None:
        if not self.active:
            return
        try:
            line = clean(self.format(record))
        except Exception:  # noqa: BLE001 - a bad log call must not fail the try
            self.handleError(record)
            return
        if len(line) > LINE_CHARS:
            line = line[: LINE_CHARS - 1] + "…"
        if not self.seen and self.live is not None:
            self.live.begin(*self.try_of)
        self.seen += 1
        size = len(line.encode("utf-8", "replace")) + 1
        half_lines, half_bytes = self.max_lines // 2, self.max_bytes // 2
        if (
            not self.tail
            and len(self.head) < max(1, self.max_lines - half_lines)
            and (self.head_bytes + size <= self.max_bytes - half_bytes or not self.head)
        ):
            self.head.append(line)
            self.head_bytes += size
            if self.live is not None:
                self.live.append((line + "\n").encode("utf-8", "replace"))
            return
        # Past the head's half of the budget: the newest lines in the other half.
        self.tail.append(line)
        self.tail_bytes += size
        while self.tail and (len(self.tail) > half_lines or self.tail_bytes > half_bytes):
            gone = self.tail.popleft()
            self.tail_bytes -= len(gone.encode("utf-8", "replace")) + 1
        if self.live is not None:
            self.live.append((line + "\n").encode("utf-8", "replace"))


class _KeepOldLevels(logging.Filter):
    """On a handler that was on the root logger before the capture lowered its level: drop
    a record that the old levels would have dropped before it reached this handler."""

    def __init__(self, root_level: int) -> None:
        super().__init__()
        self.root_level = root_level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.root_level:
            return True
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None and logger.parent is not None:  # up to, not including, root
            if logger.level:
                return record.levelno >= logger.level
            logger = logger.parent
        return False


def install(level_name: str, max_lines: int, max_bytes: int, live: LiveSlot | None = None) -> Capture:
    """Put a capture on this process's root logger (once, in the child) and return it."""
    level = logging.getLevelName(level_name)
    capture = Capture(level, max_lines, max_bytes, live)
    root = logging.getLogger()
    if root.level > level or root.level == logging.NOTSET:
        keep = _KeepOldLevels(root.level or logging.WARNING)
        for handler in root.handlers:
            handler.addFilter(keep)
        root.setLevel(level)
    root.addHandler(capture)
    return capture
