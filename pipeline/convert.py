"""Attachments to text: text/plain, text/html (to readable text) and PDF (pypdf).

Anything else is recorded as not convertible; a broken document is a note, not an error.
The work is bounded: text stops at the caller's limit (what is left of the email's
``PIPELINE_MAX_TEXT``), and a PDF is read for at most ``PIPELINE_PDF_MAX_PAGES`` pages of at
most ``PIPELINE_PDF_PAGE_TOKENS`` content tokens each, every content stream once.
"""

from __future__ import annotations

import codecs
import functools
import io
import logging
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.conf import settings

from pipeline import storable

logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken PDFs are expected input

_BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "section"}
_SKIP = {"script", "style", "head", "title"}

# Codecs that Python knows but that are no character set of mail: they raise on any input
# (``undefined``), refuse the "replace" error handler (``idna``), turn escapes into NUL
# and lone surrogates (``unicode_escape``), or take quadratic time (``punycode``).
_NOT_CHARSETS = {"undefined", "idna", "punycode", "unicode_escape", "raw_unicode_escape"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Readable text: tags dropped, scripts and styles skipped, one line per block."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def text_codec(charset: str | None) -> str | None:
    """The codec that decodes text declared in ``charset``; None when there is none (no
    charset, an unknown one, a name Python cannot look up, or a codec that is no charset)."""
    if not charset or len(charset) > 100:
        return None
    try:
        name = codecs.lookup(charset).name
        b"".decode(name)  # refuses bytes-to-bytes codecs (base64_codec, zlib_codec…)
    except (LookupError, ValueError, TypeError, UnicodeError):  # unknown, NUL in the name…
        return None
    return None if name.replace("-", "_") in _NOT_CHARSETS else name


def decode(data: bytes, charset: str | None) -> str:
    """Bytes in a declared charset as storable text: a charset that cannot decode text reads
    as UTF-8, bad bytes are replaced, NUL is dropped."""
    codec = text_codec(charset) or "utf-8"
    try:
        text = data.decode(codec, "replace")
    except (UnicodeError, ValueError, LookupError):
        text = data.decode("utf-8", "replace")
    return storable.text(text)


@dataclass
class _PdfText:
    """Text gathered from a PDF's pages up to a limit, and what was left out."""

    limit: int
    pages: list[str] = field(default_factory=list)
    size: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return self.size >= self.limit


class _TextLimitReached(Exception):
    """Raised from pypdf's text visitor: the rest of the page is not needed."""


def pdf_to_text(data: bytes, limit: int) -> tuple[str, str]:
    """(text, note) of a PDF, read within the configured bounds; the note says what was skipped."""
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError

    found = _PdfText(limit=limit)
    max_pages, page_tokens = settings.PIPELINE_PDF_MAX_PAGES, settings.PIPELINE_PDF_PAGE_TOKENS
    # pypdf parses a page's whole content stream before it yields any text: this budget,
    # not the text limit, is what bounds the work on one page.
    with apply_configuration(stream_parsing_work_maximum_count=page_tokens):
        reader = PdfReader(io.BytesIO(data))
        total = len(reader.pages)
        read_streams: set[tuple[tuple[int, int], ...]] = set()
        repeated = 0
        for number, page in enumerate(reader.pages[:max_pages], start=1):
            streams = _content_streams(page)
            if streams is not None and streams in read_streams:
                repeated += 1  # the same stream shows the same text: reading it again adds nothing
                continue
            if streams is not None:
                read_streams.add(streams)
            pieces: list[str] = []
            try:
                page.extract_text(visitor_text=functools.partial(_collect, found, pieces))
            except _TextLimitReached:
                pass
            except LimitReachedError:
                found.notes.append(
                    f"page {number} skipped: its content is over {page_tokens:,} tokens (PIPELINE_PDF_PAGE_TOKENS)"
                )
                continue
            page_text = "".join(pieces)
            found.pages.append(page_text if found.full else page_text.strip())
            if found.full:
                found.notes.append(f"text limit of {limit:,} characters reached on page {number}")
                break
    if total > max_pages and not found.full:
        found.notes.insert(0, f"text of the first {max_pages} of {total} pages (PIPELINE_PDF_MAX_PAGES)")
    if repeated:
        found.notes.append(f"{repeated} pages repeat the content of an earlier page")
    text = "\n".join(page for page in found.pages if page)
    # Cut at the limit, the text keeps its last character: the email's budget is spent.
    text = text.lstrip() if found.full else text.strip()
    return text[:limit], "; ".join(found.notes)


def _collect(found: _PdfText, pieces: list[str], text: str, *_: object) -> None:
    room = found.limit - found.size
    pieces.append(text[:room])
    found.size += min(len(text), room)
    if found.full:
        raise _TextLimitReached


def _content_streams(page: Any) -> tuple[tuple[int, int], ...] | None:
    """The page's content streams as object references; None when they are not references."""
    from pypdf.generic import ArrayObject, IndirectObject

    if "/Contents" not in page:
        return None
    raw = page.raw_get("/Contents")
    refs = list(raw) if isinstance(raw, ArrayObject) else [raw]
    if not refs or not all(isinstance(ref, IndirectObject) for ref in refs):
        return None
    return tuple((ref.idnum, ref.generation) for ref in refs)


def to_text(
    content_type: str, data: bytes, charset: str | None = None, *, limit: int | None = None
) -> tuple[str | None, str]:
    """(text, note): text is None when the type cannot be converted, and the note says why
    (or, for a partial conversion, what was left out). At most ``limit`` characters."""
    if limit is None:
        limit = settings.PIPELINE_MAX_TEXT
    note = ""
    try:
        if content_type == "text/plain":
            text = decode(data, charset)
        elif content_type == "text/html":
            text = html_to_text(decode(data, charset))
        elif content_type == "application/pdf":
            text, note = pdf_to_text(data, limit)
        else:
            return None, f"cannot convert {content_type}"
    except Exception as exc:  # noqa: BLE001 - a broken document is recorded, not raised
        return None, storable.text(f"conversion failed: {type(exc).__name__}: {exc}")[:500]
    return storable.text(text)[:limit], storable.text(note)[:500]
