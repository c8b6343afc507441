"""repository.ingest: read a repository's files, classify it and scan it with simple heuristics.

Files come from ``Repository.local_path`` (a checkout on this machine) or, failing that,
from ``metadata["files"]`` ({path: text}). Nothing is fetched over the network here.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.utils import timezone

from workspaces.errors import RepositoryUnreadable
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


def read_files(repository: Repository) -> Iterator[tuple[str, str]]:
    """Yield ``(posix path, text)`` in path order; binary and huge files are skipped."""
    if repository.local_path:
        root = Path(repository.local_path)
        if not root.is_dir():
            raise RepositoryUnreadable(f"{repository.local_path} is not a directory.")
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(files):
                path = Path(directory) / name
                if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = path.read_bytes()
                if b"\0" in data:
                    continue
                yield path.relative_to(root).as_posix(), data.decode("utf-8", errors="replace")
    elif isinstance(repository.metadata.get("files"), dict):
        for name, text in sorted(repository.metadata["files"].items()):
            yield str(name), str(text)
    else:
        raise RepositoryUnreadable(f"Repository {repository.name!r} has no local path and no stored files.")


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
    progress(5, "Reading files")
    languages: Counter[str] = Counter()
    paths: list[str] = []
    findings: list[Finding] = []
    lines = 0
    for path, text in read_files(repository):
        paths.append(path)
        lines += text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        language = LANGUAGES.get(PurePosixPath(path).suffix.lower())
        if language:
            languages[language] += 1
        findings.extend(scan(path, text))
    progress(70, f"Classifying {len(paths)} files")
    if not any(part.startswith("test") for path in paths for part in PurePosixPath(path).parts):
        findings.append(Finding("quality.no-tests", "", "No test files or folders found."))
    repository.file_count = len(paths)
    repository.line_count = lines
    repository.languages = dict(languages.most_common())
    repository.primary_language = languages.most_common(1)[0][0] if languages else ""
    repository.kind = classify(set(paths))
    repository.paths = sorted(paths)[:MAX_PATHS]
    repository.findings = [finding.as_dict() for finding in findings]
    repository.status = Repository.Status.INGESTED
    repository.ingested_at = timezone.now()
    repository.save()
    progress(100, f"Ingested {len(paths)} files, {len(findings)} findings")
    return repository
