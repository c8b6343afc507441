"""Reading emails from files: single ``.eml`` files, mbox files and Maildir folders.

One bad file or message is counted and skipped; the import goes on. The reading is
confined and bounded, because the folder may hold anything:

- a folder is walked without leaving it: a symbolic link is followed only to a place
  inside the folder given, and no folder is read twice (links can form loops);
- only regular files are opened (a FIFO would block the import for ever);
- an email over ``PIPELINE_MAX_EMAIL_BYTES`` is refused by its size (its ``stat``, or its
  offsets in an mbox file) before it is read, and no read takes more than that.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import InterfaceError, OperationalError

from pipeline import intake
from pipeline.errors import EmailTooLarge, UnreadableEmail

logger = logging.getLogger("pipeline.import")

# mbox files are scanned a line at a time, and a line may be as long as the file.
_MBOX_CHUNK = 64 * 1024


@dataclass
class ImportCounts:
    imported: int = 0
    already_present: int = 0
    unreadable: int = 0
    too_large: int = 0
    problems: list[str] = field(default_factory=list)  # what was unreadable, and why
    oversized: list[str] = field(default_factory=list)  # what was too large, and its size


class _Reader:
    """The emails under the paths of one import, each folder read once."""

    def __init__(self, counts: ImportCounts) -> None:
        self.counts = counts
        self.limit: int = settings.PIPELINE_MAX_EMAIL_BYTES
        self.visited: set[tuple[int, int]] = set()  # (device, inode) of every folder read
        self.root = Path("/")

    def messages(self, name: str) -> Iterator[tuple[str, bytes]]:
        """(source, raw bytes) for every email under ``name``, confined to it."""
        given = Path(name)
        try:
            real = given.resolve(strict=True)  # the path given is followed wherever it leads
        except FileNotFoundError:
            self.unreadable(name, "no such file or folder")
            return
        except (OSError, RuntimeError) as exc:
            self.unreadable(name, str(exc))
            return
        self.root = real if real.is_dir() else real.parent
        yield from self._visit(given, real)

    def _visit(self, shown: Path, real: Path) -> Iterator[tuple[str, bytes]]:
        try:
            info = real.stat()
        except OSError as exc:
            self.unreadable(shown, exc)
            return
        if stat.S_ISDIR(info.st_mode):
            if (info.st_dev, info.st_ino) in self.visited:
                return  # read already: a link led back to it
            self.visited.add((info.st_dev, info.st_ino))
            if _is_maildir(real):
                yield from self._maildir(shown, real)
            else:
                yield from self._folder(shown, real)
        elif stat.S_ISREG(info.st_mode):
            yield from self._file(shown, real)
        else:
            self.unreadable(shown, "not a regular file")

    def _folder(self, shown: Path, real: Path) -> Iterator[tuple[str, bytes]]:
        try:
            children = sorted(real.iterdir())
        except OSError as exc:
            self.unreadable(shown, exc)
            return
        for child in children:
            if child.suffix.lower() in (".eml", ".mbox", "") or child.is_dir():
                target = self._inside(shown / child.name, child)
                if target is not None:
                    yield from self._visit(shown / child.name, target)

    def _maildir(self, shown: Path, real: Path) -> Iterator[tuple[str, bytes]]:
        for sub in ("new", "cur"):
            folder = self._inside(shown / sub, real / sub)
            if folder is None:
                continue
            try:
                entries = sorted(folder.iterdir())
            except OSError as exc:
                self.unreadable(shown / sub, exc)
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.is_dir():
                    continue
                source = f"maildir:{shown}#{entry.name.split(':')[0]}"
                target = self._inside(source, entry)
                if target is not None:
                    yield from self._email_file(source, target)

    def _inside(self, shown: Path | str, path: Path) -> Path | None:
        """``path`` with every link resolved, when that is inside the folder given."""
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:  # a dangling link, or links that form a loop
            self.unreadable(shown, f"broken link ({exc})")
            return None
        if not real.is_relative_to(self.root):
            self.unreadable(shown, f"a link to {real}, out of {self.root}: not followed")
            return None
        return real

    def _file(self, shown: Path, real: Path) -> Iterator[tuple[str, bytes]]:
        try:
            handle, size = _open(real)
        except (OSError, UnreadableEmail) as exc:
            self.unreadable(shown, exc)
            return
        with handle:
            if shown.suffix.lower() == ".mbox" or handle.read(5) == b"From ":
                yield from self._mbox(shown, handle)
                return
            handle.seek(0)
            raw = self._read(str(shown), handle, size)
        if raw is not None:
            yield str(shown), raw

    def _email_file(self, source: str, real: Path) -> Iterator[tuple[str, bytes]]:
        try:
            handle, size = _open(real)
        except (OSError, UnreadableEmail) as exc:
            self.unreadable(source, exc)
            return
        with handle:
            raw = self._read(source, handle, size)
        if raw is not None:
            yield source, raw

    def _mbox(self, shown: Path, handle: BinaryIO) -> Iterator[tuple[str, bytes]]:
        try:
            spans = _mbox_spans(handle)
        except OSError as exc:
            self.unreadable(shown, exc)
            return
        for key, (start, stop) in enumerate(spans):
            source = f"mbox:{shown}#{key}"
            if stop - start > self.limit:
                self.too_large(source, stop - start)
                continue
            try:
                handle.seek(start)
                data = handle.read(stop - start)
            except OSError as exc:
                self.unreadable(source, exc)
                continue
            yield source, data.partition(b"\n")[2]  # without its "From " line

    def _read(self, source: str, handle: BinaryIO, size: int) -> bytes | None:
        """The file's bytes, or None when it is over the limit (not read, when its size says so)."""
        if size > self.limit:
            self.too_large(source, size)
            return None
        try:
            data = handle.read(size + 1)
            if size < len(data) <= self.limit:  # it grew since it was measured
                data += handle.read(self.limit + 1 - len(data))
        except OSError as exc:
            self.unreadable(source, exc)
            return None
        if len(data) > self.limit:
            self.too_large(source, len(data))
            return None
        return data

    def unreadable(self, source: object, reason: object) -> None:
        self.counts.unreadable += 1
        self.counts.problems.append(f"{source}: {reason}")
        logger.warning("Unreadable %s: %s", source, reason)

    def too_large(self, source: str, size: int) -> None:
        self.counts.too_large += 1
        self.counts.oversized.append(f"{source}: {intake.too_large_message(size)}")
        logger.warning("Too large %s: %s bytes", source, size)


def _is_maildir(path: Path) -> bool:
    return all((path / sub).is_dir() for sub in ("cur", "new", "tmp"))


def _open(path: Path) -> tuple[BinaryIO, int]:
    """A regular file opened for reading, and its size. Not through a link swapped in since
    it was checked (O_NOFOLLOW), and without blocking on a FIFO (O_NONBLOCK)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnreadableEmail("not a regular file")
    return os.fdopen(fd, "rb"), info.st_size


def _mbox_spans(handle: BinaryIO) -> list[tuple[int, int]]:
    """(start, stop) of every message of an mbox file, split as ``mailbox.mbox`` splits it
    (a line starting "From " begins a message; a blank line before it ends the previous
    one), reading at most ``_MBOX_CHUNK`` bytes at a time however long a line is."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    position, blank, line_start = 0, False, True
    handle.seek(0)
    while True:
        chunk = handle.readline(_MBOX_CHUNK)
        if not chunk or (line_start and chunk.startswith(b"From ")):
            if start is not None:
                spans.append((start, position - 1 if blank else position))
            if not chunk:
                return spans
            start = position
        blank = line_start and chunk == b"\n"
        line_start = chunk.endswith(b"\n")
        position += len(chunk)


def import_paths(paths: list[str]) -> ImportCounts:
    """Receive every email under ``paths``; returns imported / already present / unreadable /
    too large."""
    counts = ImportCounts()
    reader = _Reader(counts)
    for name in paths:
        for source, raw in reader.messages(name):
            try:
                received = intake.receive(raw, source=source)
            except EmailTooLarge:
                reader.too_large(source, len(raw))
                continue
            except UnreadableEmail as exc:
                reader.unreadable(source, exc)
                continue
            except (OperationalError, InterfaceError):
                raise  # the database is unreachable: stop here, a rerun goes on from here
            except Exception as exc:  # noqa: BLE001 - one bad message must not stop the import
                logger.exception("Could not import %s", source)
                reader.unreadable(source, f"{type(exc).__name__}: {exc}")
                continue
            if received.created:
                counts.imported += 1
            else:
                counts.already_present += 1
    return counts
