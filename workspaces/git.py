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
- with the credential, when there is one, in an ``http.<url>.extraHeader`` for the
  repository's own scheme, host and port, passed through the environment (``GIT_CONFIG_*``):
  never in argv, in ``.git/config`` or in a log line; over HTTPS only
  (``CREDENTIALS_PLAIN_HTTP_HOSTS`` aside); and with redirects off (``http.followRedirects``):
  git matches that header against the URL it was given, not the one a redirect names, so
  a host answering 301 to another would otherwise have the header sent there.

The tree is listed (``ls-tree``) before the checkout: its total size is checked against the
limit first, and the listing says which paths are symbolic links, which the reader of
the checkout never follows.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import logging
import os
import re
import resource
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from workspaces import addresses
from workspaces.credentials import redact
from workspaces.errors import RepositoryFetchFailed, RepositoryRefused, RepositoryTooLarge

logger = logging.getLogger("workspaces.git")

PROTOCOLS = addresses.SCHEMES
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
    # A transfer slower than 1 kB/s for a minute is a host that stopped answering.
    "http.lowSpeedLimit=1000",
    "http.lowSpeedTime=60",
    # A redirect, to another host above all, is not followed: the credential stays where it was given.
    "http.followRedirects=false",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=always" for name in PROTOCOLS),
]
PR_SET_PDEATHSIG = 1  # prctl(2)
MODE_LINK = "120000"
MODE_SUBMODULE = "160000"
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
    timeout: float
    max_bytes: int


def check_url(url: str) -> addresses.Address:
    """Refuse what git must not be handed: options, unknown transports, remote helpers, and
    URLs that git and Python would read differently (``workspaces.addresses``)."""
    try:
        return addresses.parse(url)
    except addresses.AddressRefused as exc:
        raise RepositoryRefused(str(exc)) from None


def fetch(url: str, root: Path, limits: Limits, *, credential: str = "") -> Checkout:
    """Fetch the default branch of ``url`` (depth 1) into ``root`` and check it out.

    ``root`` is created on the first fetch and reused after; files of the previous checkout
    that the new commit no longer has are removed. ``url`` may carry ``***`` where its
    credential was; ``credential`` is that ``user:token``.
    """
    address = check_url(url)
    if credential:
        if address.scheme not in ("http", "https"):
            raise RepositoryRefused(f"A stored credential is sent over HTTPS only, not {address.scheme}.")
        try:
            addresses.check_credential_transport(address.scheme, address.host)
        except addresses.AddressRefused as exc:
            raise RepositoryRefused(str(exc)) from None
    git = Git(
        limits, address.basic_credential(credential) if credential else "", addresses.url_prefix(address)
    )
    target = addresses.for_git(url)
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
    listing = git.run(["-C", str(root), "ls-tree", "-r", "-l", "-z", "--full-tree", commit], text=False)
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, _kind, _sha, size = meta.split()
        entries.append(
            TreeEntry(
                path=raw_path.decode("utf-8", "surrogateescape"),
                mode=mode.decode(),
                size=int(size) if size != b"-" else 0,
            )
        )
    return entries


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

    def __init__(self, limits: Limits, credential: str = "", credential_url: str = "") -> None:
        self.limits = limits
        self.credential = credential
        self.credential_url = credential_url  # the only URLs the credential's header goes to
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
            config.append(f"http.{self.credential_url}.extraHeader=Authorization: Basic {basic}")
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for index, item in enumerate(config):
            key, _, value = item.partition("=")
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        return env

    def run(self, args: list[str], *, text: bool = True) -> subprocess.CompletedProcess:
        command = ["git", *args]
        max_bytes = self.limits.max_bytes

        def limit_file_size() -> None:
            # Inherited by every helper git starts: no file it writes can pass the limit.
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
            _die_with_parent()

        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.environment(),
            preexec_fn=limit_file_size,  # noqa: PLW1509 - the child only calls setrlimit
        )
        try:
            stdout, stderr = process.communicate(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._kill(process)
            raise RepositoryFetchFailed(
                f"git {args[0] if args[0] != '-C' else args[2]} did not finish within "
                f"{self.limits.timeout:g} s (GIT_TIMEOUT)."
            ) from None
        finally:
            self._kill(process)
        if process.returncode == 0:
            return subprocess.CompletedProcess(
                command, 0, stdout.decode("utf-8", "replace") if text else stdout, stderr
            )
        message = redact(stderr.decode("utf-8", "replace").strip(), self.credential)[-2000:]
        verb = args[2] if args[0] == "-C" else args[0]
        if process.returncode == -signal.SIGXFSZ or (args[0] == "-C" and _cut_off(Path(args[1]), max_bytes)):
            raise RepositoryTooLarge(
                f"git {verb} wrote past the size limit of {max_bytes:,} bytes (REPOSITORY_MAX_BYTES)."
            )
        logger.info("git %s failed (%s): %s", verb, process.returncode, message)
        if TRANSIENT.search(message):
            raise RepositoryFetchFailed(f"git {verb} failed: {message}")
        raise RepositoryRefused(f"git {verb} failed: {message or f'exit status {process.returncode}'}")

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        if process.poll() is None:
            # The helpers first found, then all killed: once git is gone they are no longer its children.
            for pid in [*_descendants(process.pid), process.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
