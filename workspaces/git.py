"""git, run safely on a URL someone typed in: a shallow fetch of the default branch into a
working folder, then a checkout that is measured before it is written.

Every git process runs:
- within one deadline for the whole fetch (``GIT_TIMEOUT``, shorter than the job's own
  timeout); past it git and every helper it started (``git-remote-https``, ``ssh``,
  ``upload-pack``) are killed. git stays in the worker's process group, so a worker killed
  as a whole takes them along; git dies with the job process that started it (a job stopped
  on its own), and its transports give up on a host that stops sending (``http.lowSpeed*``,
  ssh keep-alives);
- with no terminal prompt, no system or global config, no hooks, no symlinks in the
  checkout, only the transports listed in ``PROTOCOLS`` (never ``ext::``), and a limit
  on the size of any file it writes (``REPOSITORY_MAX_BYTES``), so a huge pack is cut off
  by the kernel rather than filling the disk;
- with the credential, when there is one, in an ``http.extraHeader`` passed through the
  environment (``GIT_CONFIG_*``): never in argv, in ``.git/config`` or in a log line.

The tree is listed (``ls-tree``) before the checkout: its entries (files, links and folders)
are counted as git writes them, git is stopped past ``REPOSITORY_MAX_ENTRIES``, the total
size is checked against the limit, and the listing says which paths are symbolic links,
which the reader of the checkout never follows. So a few kilobytes of nested trees that
would check out millions of files (or list billions of empty folders) are refused before
anything is written.

What git itself may take is bounded too: its output is read as it comes, never more than
``GIT_MAX_OUTPUT_BYTES`` of it, and every git process and helper gets at most
``GIT_MAX_MEMORY_BYTES`` of address space, so a flood of refs advertised (a megabyte of
gzip that inflates to millions) ends in git's "out of memory" rather than in the worker's.
Each of these fails the repository for good (``RepositoryTooLarge``), saying which limit.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import logging
import os
import re
import resource
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from workspaces.credentials import redact, without_userinfo
from workspaces.errors import RepositoryFetchFailed, RepositoryRefused, RepositoryTooLarge

logger = logging.getLogger("workspaces.git")

PROTOCOLS = ("https", "http", "ssh", "git", "file")
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:(?!//)")  # git@github.com:org/repo.git
CONFIG = [
    "core.hooksPath=/dev/null",
    "core.symlinks=false",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.quotePath=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "submodule.recurse=false",
    # Keep every fetched pack as one file, so the file-size limit bounds it.
    "fetch.unpackLimit=1",
    # One thread for index-pack: each thread's allocator arena counts against the memory limit.
    "pack.threads=1",
    # A transfer slower than 1 kB/s for a minute is a host that stopped answering.
    "http.lowSpeedLimit=1000",
    "http.lowSpeedTime=60",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=always" for name in PROTOCOLS),
]
PR_SET_PDEATHSIG = 1  # prctl(2)
MODE_LINK = "120000"
MODE_SUBMODULE = "160000"
MODE_TREE = "040000"
STDERR_KEPT = 64 * 1024  # the end of git's stderr, for the error message
OUT_OF_MEMORY = re.compile(
    r"out of memory|cannot allocate memory|malloc failed|mmap failed|unable to create thread", re.IGNORECASE
)
# Failures that another try may get past: the network, the far side being busy.
TRANSIENT = re.compile(
    r"could not resolve host|connection (refused|reset|timed out)|failed to connect|timed out|"
    r"temporary failure|network is unreachable|remote end hung up|early eof|HTTP 5\d\d|"
    r"returned error: 5\d\d|RPC failed",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TreeEntry:
    path: str
    mode: str
    size: int

    @property
    def is_link(self) -> bool:
        return self.mode == MODE_LINK

    @property
    def is_submodule(self) -> bool:
        return self.mode == MODE_SUBMODULE


@dataclass(frozen=True)
class Checkout:
    """What a fetch left in the working folder."""

    root: Path
    commit: str = ""  # "" for an empty repository
    branch: str = ""
    entries: list[TreeEntry] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.commit


@dataclass(frozen=True)
class Limits:
    timeout: float  # GIT_TIMEOUT: every command of one fetch together
    max_bytes: int  # REPOSITORY_MAX_BYTES: any file git writes, and the checkout
    max_entries: int = 100_000  # REPOSITORY_MAX_ENTRIES: files, links and folders of the tree
    max_output: int = 64 * 1024 * 1024  # GIT_MAX_OUTPUT_BYTES: what one git command prints
    max_memory: int = 1024 * 1024 * 1024  # GIT_MAX_MEMORY_BYTES: address space of each git process


def check_url(url: str) -> None:
    """Refuse what git must not be handed: options, unknown transports, remote helpers."""
    if not url or url.startswith("-") or any(char in url for char in "\n\r\0"):
        raise RepositoryRefused(f"Not a repository URL: {url!r}.")
    scheme = urlsplit(url).scheme
    if scheme:
        if scheme not in PROTOCOLS:
            raise RepositoryRefused(
                f"git transport {scheme!r} is not allowed; use one of {', '.join(PROTOCOLS)}."
            )
        return
    if "::" in url:
        raise RepositoryRefused(f"git remote helpers are not allowed: {url!r}.")
    if not (SCP_LIKE.match(url) or os.path.isabs(url)):
        raise RepositoryRefused(f"Not a repository URL: {url!r} (use an absolute path for a local one).")


def fetch(url: str, root: Path, limits: Limits, *, credential: str = "") -> Checkout:
    """Fetch the default branch of ``url`` (depth 1) into ``root`` and check it out.

    ``root`` is created on the first fetch and reused after; files of the previous checkout
    that the new commit no longer has are removed. ``url`` may carry ``***`` where its
    credential was; ``credential`` is that ``user:token``.
    """
    check_url(url)
    git = Git(limits, credential)
    target = without_userinfo(url)
    head = git.run(["ls-remote", "--symref", "--", target, "HEAD"]).stdout
    branch = ""
    commit = ""
    for line in head.splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            branch = line[5:-5].removeprefix("refs/heads/")
        elif line.endswith("\tHEAD"):
            commit = line.split("\t", 1)[0]
    if not commit:
        return Checkout(root=root)  # an empty repository: nothing to fetch
    if not (root / ".git").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        git.run(["init", "--quiet", "--template=", str(root)])
    git.run(["-C", str(root), "fetch", "--quiet", "--depth", "1", "--no-tags", "--", target, "HEAD"])
    commit = git.run(["-C", str(root), "rev-parse", "--verify", "FETCH_HEAD^{commit}"]).stdout.strip()
    entries = list_tree(git, root, commit)
    total = sum(entry.size for entry in entries)
    if total > limits.max_bytes:
        raise RepositoryTooLarge(
            f"The checkout would take {total:,} bytes; the limit is {limits.max_bytes:,} (REPOSITORY_MAX_BYTES)."
        )
    git.run(["-C", str(root), "checkout", "--quiet", "--force", "--detach", commit])
    git.run(["-C", str(root), "clean", "-ffdxq"])
    return Checkout(root=root, commit=commit, branch=branch, entries=entries)


def list_tree(git: Git, root: Path, commit: str) -> list[TreeEntry]:
    """The files, links and submodules of ``commit``, read as ``ls-tree`` writes them.

    Folders are listed too (``-t``) and counted with the rest: past ``max_entries`` git is
    stopped and the repository refused, however little it weighs (every file of a tree bomb
    is the same empty blob, and a tree of nested empty trees has no file at all)."""
    limit = git.limits.max_entries
    entries: list[TreeEntry] = []
    counted = 0

    def take(record: bytes) -> None:
        nonlocal counted
        counted += 1
        if counted > limit:
            raise RepositoryTooLarge(
                f"The repository's tree has more than {limit:,} entries (files, links and folders); "
                "the limit is REPOSITORY_MAX_ENTRIES. Nothing was checked out."
            )
        meta, _, raw_path = record.partition(b"\t")
        mode, _kind, _sha, size = meta.split()
        if mode.decode() == MODE_TREE:
            return
        entries.append(
            TreeEntry(
                path=raw_path.decode("utf-8", "surrogateescape"),
                mode=mode.decode(),
                size=int(size) if size != b"-" else 0,
            )
        )

    git.run(
        ["-C", str(root), "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit],
        consume=_Records(take),
    )
    return entries


class _Records:
    """Feeds each NUL-terminated record of a stream of chunks to ``take`` as it completes."""

    def __init__(self, take: Callable[[bytes], None]) -> None:
        self.take = take
        self.buffer = bytearray()
        self.scanned = 0  # no NUL before this offset of the buffer

    def __call__(self, chunk: bytes) -> None:
        self.buffer += chunk
        start = 0
        while (end := self.buffer.find(b"\0", self.scanned)) != -1:
            if end > start:
                self.take(bytes(self.buffer[start:end]))
            start = self.scanned = end + 1
        del self.buffer[:start]
        self.scanned = len(self.buffer)


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the one that started it exits, so a job stopped by
    its worker (its timeout, a shutdown) cannot leave git running on its own."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc (Linux)."""
    parents: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid …": comm may hold spaces, so read after its last ")".
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat_file.parent.name))
    found, stack = [], [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _cut_off(root: Path, max_bytes: int) -> bool:
    """Whether a helper of git (``index-pack``) was stopped at the file-size limit: its
    partial pack is that size. The partial packs are removed either way."""
    hit = False
    for partial in (root / ".git" / "objects" / "pack").glob("tmp_*"):
        hit = hit or partial.stat().st_size >= max_bytes
        partial.unlink(missing_ok=True)
    return hit


class Git:
    """Runs git with the safety settings above, the deadline and the size limit."""

    def __init__(self, limits: Limits, credential: str = "") -> None:
        self.limits = limits
        self.credential = credential
        self.deadline = time.monotonic() + limits.timeout  # shared by every command of a fetch

    def environment(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.devnull,
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_SSH_COMMAND": (
                "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=30 "
                "-o ServerAliveInterval=15 -o ServerAliveCountMax=4"
            ),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_PROTOCOL_FROM_USER": "0",
        }
        config = list(CONFIG)
        if self.credential:
            basic = base64.b64encode(self.credential.encode()).decode()
            config.append(f"http.extraHeader=Authorization: Basic {basic}")
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for index, item in enumerate(config):
            key, _, value = item.partition("=")
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        return env

    def run(
        self, args: list[str], *, text: bool = True, consume: Callable[[bytes], None] | None = None
    ) -> subprocess.CompletedProcess:
        """Run git; its output is returned, or handed to ``consume`` chunk by chunk as it
        comes (then ``stdout`` is empty). ``consume`` may raise to stop git."""
        command = ["git", *args]
        verb = args[2] if args[0] == "-C" else args[0]
        limits = self.limits

        def limit_child() -> None:
            _die_with_parent()
            # Inherited by every helper git starts: no file it writes can pass the size
            # limit, and no process can take more memory than its own limit.
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_bytes, limits.max_bytes))
            resource.setrlimit(resource.RLIMIT_AS, (limits.max_memory, limits.max_memory))

        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.environment(),
            preexec_fn=limit_child,  # noqa: PLW1509 - the child only calls prctl and setrlimit
        )
        try:
            stdout, stderr = self._read(process, verb, consume)
        finally:
            self._kill(process)
        if process.returncode == 0:
            return subprocess.CompletedProcess(
                command, 0, stdout.decode("utf-8", "replace") if text else stdout, stderr
            )
        message = redact(stderr.decode("utf-8", "replace").strip(), self.credential)[-2000:]
        if process.returncode == -signal.SIGXFSZ or (
            args[0] == "-C" and _cut_off(Path(args[1]), limits.max_bytes)
        ):
            raise RepositoryTooLarge(
                f"git {verb} wrote past the size limit of {limits.max_bytes:,} bytes (REPOSITORY_MAX_BYTES)."
            )
        logger.info("git %s failed (%s): %s", verb, process.returncode, message)
        if OUT_OF_MEMORY.search(message):
            raise RepositoryTooLarge(
                f"git {verb} ran out of its memory limit of {limits.max_memory:,} bytes "
                "(GIT_MAX_MEMORY_BYTES): the repository advertises or holds more than that allows "
                f"(a flood of refs, a tree bomb). git said: {message[-300:]}"
            )
        if TRANSIENT.search(message):
            raise RepositoryFetchFailed(f"git {verb} failed: {message}")
        raise RepositoryRefused(f"git {verb} failed: {message or f'exit status {process.returncode}'}")

    def _read(
        self, process: subprocess.Popen, verb: str, consume: Callable[[bytes], None] | None
    ) -> tuple[bytes, bytes]:
        """git's stdout (at most ``max_output`` bytes of it, kept or handed to ``consume``)
        and the end of its stderr, read as they come until both close, within the deadline;
        then git's exit."""
        assert process.stdout is not None and process.stderr is not None
        limit = self.limits.max_output
        stdout, stderr = bytearray(), bytearray()
        written = 0
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            selector.register(process.stderr, selectors.EVENT_READ)
            while selector.get_map():
                ready = selector.select(timeout=max(0.0, self.deadline - time.monotonic()))
                if not ready:
                    self._kill(process)
                    raise self._timed_out(verb)
                for key, _events in ready:
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.fileobj is process.stderr:
                        stderr += chunk
                        del stderr[:-STDERR_KEPT]
                    else:
                        written += len(chunk)
                        if written > limit:
                            raise RepositoryTooLarge(
                                f"git {verb} wrote more than {limit:,} bytes of output "
                                "(GIT_MAX_OUTPUT_BYTES)."
                            )
                        if consume is None:
                            stdout += chunk
                        else:
                            consume(chunk)
        try:
            process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise self._timed_out(verb) from None
        return bytes(stdout), bytes(stderr)

    def _timed_out(self, verb: str) -> RepositoryFetchFailed:
        return RepositoryFetchFailed(
            f"git {verb} did not finish within {self.limits.timeout:g} s (GIT_TIMEOUT)."
        )

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        if process.poll() is None:
            # The helpers first found, then all killed: once git is gone they are no longer its children.
            for pid in [*_descendants(process.pid), process.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
