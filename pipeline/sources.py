"""Reading emails from files: single ``.eml`` files, mbox files and Maildir folders.

One bad file or message is counted as unreadable and skipped; the import goes on.
"""

from __future__ import annotations

import logging
import mailbox
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import intake
from pipeline.errors import UnreadableEmail

logger = logging.getLogger("pipeline.import")


@dataclass
class ImportCounts:
    imported: int = 0
    already_present: int = 0
    unreadable: int = 0
    problems: list[str] = field(default_factory=list)


def _is_maildir(path: Path) -> bool:
    return all((path / sub).is_dir() for sub in ("cur", "new", "tmp"))


def _is_mbox(path: Path) -> bool:
    if path.suffix.lower() == ".mbox":
        return True
    with path.open("rb") as handle:
        return handle.read(5) == b"From "


def messages(path: Path, counts: ImportCounts) -> Iterator[tuple[str, bytes]]:
    """(source, raw bytes) for every email under ``path``; failures go into ``counts``."""
    try:
        if path.is_dir():
            if _is_maildir(path):
                box = mailbox.Maildir(str(path), factory=None, create=False)
                yield from _mailbox_messages(box, f"maildir:{path}", counts)
            else:
                for child in sorted(path.iterdir()):
                    if child.is_dir() or child.suffix.lower() in (".eml", ".mbox", ""):
                        yield from messages(child, counts)
        elif _is_mbox(path):
            yield from _mailbox_messages(mailbox.mbox(str(path), create=False), f"mbox:{path}", counts)
        else:
            yield str(path), path.read_bytes()
    except OSError as exc:
        _unreadable(counts, str(path), exc)


def _mailbox_messages(box: mailbox.Mailbox, source: str, counts: ImportCounts) -> Iterator[tuple[str, bytes]]:
    for key in box.iterkeys():
        try:
            raw = box.get_bytes(key)
        except Exception as exc:  # noqa: BLE001 - one broken message must not stop the import
            _unreadable(counts, f"{source}#{key}", exc)
            continue
        yield f"{source}#{key}", raw


def _unreadable(counts: ImportCounts, source: str, exc: BaseException) -> None:
    counts.unreadable += 1
    counts.problems.append(f"{source}: {exc}")
    logger.warning("Unreadable %s: %s", source, exc)


def import_paths(paths: list[str]) -> ImportCounts:
    """Receive every email under ``paths``; returns imported / already present / unreadable."""
    counts = ImportCounts()
    for name in paths:
        path = Path(name)
        if not path.exists():
            _unreadable(counts, name, FileNotFoundError("no such file or folder"))
            continue
        for source, raw in messages(path, counts):
            try:
                received = intake.receive(raw, source=source)
            except UnreadableEmail as exc:
                _unreadable(counts, source, exc)
                continue
            if received.created:
                counts.imported += 1
            else:
                counts.already_present += 1
    return counts
