"""repository.ingest: fetch a repository, read its files, classify it and scan it with simple
heuristics.

Files come from, in this order: the repository's ``url``, fetched with git into a working
folder of its own under ``REPOSITORIES_ROOT`` (see ``workspaces.git``); a folder on this
machine (``local_path``); or ``metadata["files"]`` ({path: text}, the embedded demo data).
Reading a folder never leaves it: symbolic links are recorded, never followed, and only
regular files are opened. What the reading met (links pointing outside, text that is not
UTF-8, more files than ``REPOSITORY_MAX_FILES``, an empty repository) is recorded among the
findings; a fetch that fails records its reason in ``ingest_error``.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.utils import timezone

from workspaces import credentials, git
from workspaces.errors import RepositoryUnreadable, WorkspaceError
from workspaces.models import Repository
from workspaces.services import Progress, load, no_progress

LANGUAGES = {
    ".py": "Python",
    ".js": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".go": "Go",
    ".rb": "Ruby",
    ".java": "Java",
    ".rs": "Rust",
    ".php": "PHP",
    ".cs": "C#",
    ".html": "HTML",
    ".css": "CSS",
    ".sql": "SQL",
    ".sh": "Shell",
}
SKIP_DIRS = {".git", ".hg", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}
MAX_FILE_BYTES = 1_000_000
MAX_PATHS = 2000
AWS_KEY = re.compile(r"\bAKIA[0-9A-Z]{16}\b")
DEBT = re.compile(r"\b(TODO|FIXME|XXX)\b")


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "path": self.path, "message": self.message}


@dataclass
class Reading:
    """Files read from one source, and what the reading met on the way."""

    max_files: int
    findings: list[Finding] = field(default_factory=list)
    unread: int = 0  # files past ``max_files``: counted, not read

    def note(self, rule: str, path: str, message: str) -> None:
        self.findings.append(Finding(rule, path, message.replace("\0", "")))


def read_folder(
    root: Path, reading: Reading, links: frozenset[str] = frozenset()
) -> Iterator[tuple[str, str]]:
    """Yield ``(posix path, text)`` of the regular files under ``root`` in path order.

    ``links`` names files that stand for symbolic links (git writes a link as a small file
    holding its target when ``core.symlinks`` is off). Binary and huge files are skipped.
    """
    root = root.resolve()
    read = 0
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        for name in sorted(dirs):
            if name in SKIP_DIRS or (here / name).is_symlink():
                dirs.remove(name)
                if name not in SKIP_DIRS:
                    _link(root, here / name, os.readlink(here / name), reading)
        dirs.sort()
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(root).as_posix()
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(info.st_mode):
                _link(root, path, os.readlink(path), reading)
                continue
            if relative in links:
                _link(root, path, _small_text(path), reading)
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                continue  # devices, pipes, sockets, and files too big to scan
            if read >= reading.max_files:
                reading.unread += 1
                continue
            data = _read_regular(path)
            if data is None or b"\0" in data:
                continue
            read += 1
            shown = _shown(relative, reading)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                reading.note(
                    "encoding.not-utf8", shown, "Not UTF-8 text; scanned with replacement characters."
                )
                text = data.decode("utf-8", errors="replace")
            yield shown, text.replace("\0", "")


def _read_regular(path: Path) -> bytes | None:
    """The file's bytes, opened without following a link swapped in since the walk saw it."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_FILE_BYTES + 1)


def _small_text(path: Path) -> str:
    data = _read_regular(path) or b""
    return data[:4096].decode("utf-8", "replace")


def _link(root: Path, path: Path, target: str, reading: Reading) -> None:
    """Record a symbolic link that points outside the checkout; no link is ever followed."""
    resolved = Path(os.path.normpath(path.parent / target))
    if os.path.isabs(target) or not resolved.is_relative_to(root):
        shown = _shown(path.relative_to(root).as_posix(), reading)
        reading.note(
            "links.outside-checkout",
            shown,
            f"A symbolic link points outside the repository ({target[:200]}); it was not followed.",
        )


def _shown(relative: str, reading: Reading) -> str:
    """A path as text: a name that is not UTF-8 is shown with replacement characters."""
    shown = os.fsencode(relative).decode("utf-8", errors="replace")
    if shown != relative:
        reading.note("encoding.path-not-utf8", shown, "The file name is not UTF-8.")
    return shown


def read_stored(repository: Repository) -> Iterator[tuple[str, str]]:
    for name, text in sorted(repository.metadata["files"].items()):
        yield str(name), str(text)


def working_folder(repository: Repository) -> Path:
    return Path(settings.REPOSITORIES_ROOT) / str(repository.pk)


@contextmanager
def checkout_lock(repository: Repository) -> Iterator[None]:
    """One fetch-and-read per working folder at a time on this machine (an ingest job and
    a provisioning run may meet); the lock goes with the process that held it."""
    root = Path(settings.REPOSITORIES_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{repository.pk}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def classify(paths: set[str]) -> str:
    """A coarse kind from marker files at the root."""
    markers = [
        ("manage.py", "django-project"),
        ("package.json", "node-package"),
        ("go.mod", "go-module"),
        ("Cargo.toml", "rust-crate"),
        ("pyproject.toml", "python-package"),
        ("setup.py", "python-package"),
    ]
    for marker, kind in markers:
        if marker in paths:
            return kind
    return "other"


def scan(path: str, text: str) -> list[Finding]:
    """Heuristic findings for one file: committed secrets and marked debt."""
    found = []
    name = PurePosixPath(path).name
    if name == ".env" or name.startswith(".env."):
        found.append(Finding("secrets.env-file", path, "An environment file is committed."))
    if "PRIVATE KEY-----" in text:
        found.append(Finding("secrets.private-key", path, "A private key is committed."))
    if AWS_KEY.search(text):
        found.append(Finding("secrets.aws-key", path, "An AWS access key id appears in the file."))
    debt = len(DEBT.findall(text))
    if debt:
        found.append(Finding("debt.markers", path, f"{debt} TODO/FIXME markers."))
    return found


def ingest_repository(repository_id: int, progress: Progress = no_progress) -> Repository:
    repository = load(Repository, repository_id)
    reading = Reading(max_files=settings.REPOSITORY_MAX_FILES)
    if repository.url:
        with checkout_lock(repository):
            progress(5, "Fetching with git")
            try:
                checkout = git.fetch(
                    repository.url,
                    working_folder(repository),
                    git.Limits(
                        timeout=settings.GIT_TIMEOUT,
                        max_bytes=settings.REPOSITORY_MAX_BYTES,
                        max_entries=settings.REPOSITORY_MAX_ENTRIES,
                        max_output=settings.GIT_MAX_OUTPUT_BYTES,
                        max_memory=settings.GIT_MAX_MEMORY_BYTES,
                    ),
                    credential=credentials.decrypt(repository.credential) if repository.credential else "",
                )
            except WorkspaceError as exc:
                Repository.objects.filter(pk=repository.pk).update(ingest_error=str(exc)[:2000])
                raise
            repository.commit_sha, repository.branch = checkout.commit, checkout.branch
            if checkout.empty:
                reading.note("repository.empty", "", "The repository has no commits yet: nothing to read.")
                return _record(repository, [], 0, reading, progress)
            progress(40, f"Reading {len(checkout.entries):,} files at {checkout.commit[:12]}")
            links = frozenset(entry.path for entry in checkout.entries if entry.is_link)
            return _scan(repository, read_folder(checkout.root, reading, links), reading, progress)
    if repository.local_path:
        root = Path(repository.local_path)
        if not root.is_dir():
            raise RepositoryUnreadable(f"{repository.local_path} is not a directory.")
        progress(5, "Reading files")
        return _scan(repository, read_folder(root, reading), reading, progress)
    if isinstance(repository.metadata.get("files"), dict):
        progress(5, "Reading stored files")
        return _scan(repository, read_stored(repository), reading, progress)
    raise RepositoryUnreadable(
        f"Repository {repository.name!r} has no URL, no local path and no stored files."
    )


def _scan(
    repository: Repository, files: Iterator[tuple[str, str]], reading: Reading, progress: Progress
) -> Repository:
    languages: Counter[str] = Counter()
    paths: list[str] = []
    findings: list[Finding] = []
    lines = 0
    for path, text in files:
        paths.append(path)
        lines += text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        language = LANGUAGES.get(PurePosixPath(path).suffix.lower())
        if language:
            languages[language] += 1
        findings.extend(scan(path, text))
    progress(70, f"Classifying {len(paths)} files")
    if reading.unread:
        reading.note(
            "ingest.files-not-read",
            "",
            f"{len(paths) + reading.unread:,} files: the first {len(paths):,} in path order were read "
            "(REPOSITORY_MAX_FILES).",
        )
    if not any(part.startswith("test") for path in paths for part in PurePosixPath(path).parts):
        findings.append(Finding("quality.no-tests", "", "No test files or folders found."))
    repository.languages = dict(languages.most_common())
    repository.primary_language = languages.most_common(1)[0][0] if languages else ""
    repository.kind = classify(set(paths))
    return _record(repository, paths, lines, reading, progress, findings, unread=reading.unread)


def _record(
    repository: Repository,
    paths: list[str],
    lines: int,
    reading: Reading,
    progress: Progress,
    findings: list[Finding] | None = None,
    *,
    unread: int = 0,
) -> Repository:
    findings = [*reading.findings, *(findings or [])]
    repository.file_count = len(paths) + unread
    repository.line_count = lines
    repository.paths = sorted(paths)[:MAX_PATHS]
    repository.findings = [finding.as_dict() for finding in findings]
    repository.status = Repository.Status.INGESTED
    repository.ingested_at = timezone.now()
    repository.ingest_error = ""
    repository.save()
    progress(100, f"Ingested {repository.file_count} files, {len(findings)} findings")
    return repository
