"""Worker processes seen from outside: their trees, CPU and memory, and stopping them for sure."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process_tree(root: int) -> list[int]:
    """``root`` and every process under it (a supervisor, its forkserver and children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (parent := _parent_of(int(entry))) is not None:
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def process_children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _parent_of(int(entry)) == pid]


def private_kib(pid: int) -> int:
    """Memory only this process maps (``Private_Clean`` + ``Private_Dirty``, KiB): what a
    forked process costs beyond the pages it still shares; 0 for a process gone."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0
    return sum(
        int(line.split()[1]) for line in lines if line.startswith(("Private_Clean:", "Private_Dirty:"))
    )


def status_kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure in KiB (``VmRSS``, ``VmHWM``); 0 for a process gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(roots: list[int]) -> int:
    """Resident memory of these processes and everything under them."""
    return sum(status_kib(pid, "VmRSS") for root in roots for pid in process_tree(root))


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of one process, without its children; 0 for one gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(roots: list[int]) -> float:
    """CPU time (user + system) used so far by these processes and everything under them."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for root in roots:
        for pid in process_tree(root):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / ticks


def is_gone(pid: int) -> bool:
    """Exited, or a zombie (it runs nothing any more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def kill_leftovers(grace: float = 20.0) -> None:
    """Terminate, then kill, every process this one started and left behind."""
    leftovers = process_tree(os.getpid())[1:]
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while leftovers and time.monotonic() < deadline:
        leftovers = [pid for pid in leftovers if not is_gone(pid)]
        time.sleep(0.1)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Pool:
    """Worker processes that always go away: ``stop`` sends SIGTERM, waits up to ``grace``
    seconds, then SIGKILLs what is left. Use it as a context manager."""

    def __init__(
        self, commands: list[list[str]], cwd: Path, env: dict[str, str], stdout: IO[str] | None = None
    ) -> None:
        self.processes: list[subprocess.Popen] = []
        self._cwd, self._env, self._stdout = cwd, env, stdout
        try:
            for command in commands:
                self.processes.append(
                    subprocess.Popen(
                        command, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.STDOUT if stdout else None
                    )
                )
        except BaseException:
            self.stop()
            raise

    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def alive(self) -> bool:
        """True, or RuntimeError if a worker has exited (so waits on it fail fast)."""
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(f"worker {process.args} exited with {process.returncode}")
        return True

    def kill_and_replace(self, index: int) -> None:
        """SIGKILL worker ``index`` and every process under it at once (a machine losing the
        task), then start the same command in its place."""
        victim = self.processes[index]
        for pid in process_tree(victim.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        victim.wait(timeout=10)
        self.processes[index] = subprocess.Popen(
            victim.args,
            cwd=self._cwd,
            env=self._env,
            stdout=self._stdout,
            stderr=subprocess.STDOUT if self._stdout else None,
        )

    def _signal(self, signum: int) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signum)

    def stop(self, grace: float = 20.0) -> list[int | None]:
        """Stop every worker; their exit codes (None for one that had to be killed and lingers)."""
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        self._signal(signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        return [process.returncode for process in self.processes]

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class MemorySampler(threading.Thread):
    """Samples the total RSS of process trees every ``period`` seconds, with how far the
    work had got (``done()``), and keeps each process's peak (VmHWM)."""

    def __init__(self, roots: list[int], done: Callable[[], int], total: int, period: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.roots, self.count_done, self.total, self.period = roots, done, total, period
        self.samples: list[tuple[float, int]] = []  # (fraction done, total RSS KiB)
        self.hwm: dict[int, int] = {}
        self.stopped = threading.Event()
        self.done = 0

    def run(self) -> None:
        while not self.stopped.wait(self.period):
            self.done = self.count_done()
            pids = [pid for root in self.roots for pid in process_tree(root)]
            rss = sum(status_kib(pid, "VmRSS") for pid in pids)
            for pid in pids:
                self.hwm[pid] = max(self.hwm.get(pid, 0), status_kib(pid, "VmHWM"))
            if rss:
                self.samples.append((self.done / self.total, rss))

    def stop(self) -> None:
        self.stopped.set()
        self.join()
