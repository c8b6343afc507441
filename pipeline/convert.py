"""Attachments to text: text/plain, text/html (to readable text) and PDF (pypdf).

Anything else is recorded as not convertible; a broken document is a note, not an error.
"""

from __future__ import annotations

import io
import logging
from html.parser import HTMLParser

MAX_TEXT = 1_000_000  # characters kept per attachment

logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken PDFs are expected input

_BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "section"}
_SKIP = {"script", "style", "head", "title"}


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


def pdf_to_text(data: bytes) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    return "\n".join((page.extract_text() or "").strip() for page in reader.pages).strip()


def decode(data: bytes, charset: str | None) -> str:
    """Bytes in a declared charset; an unknown charset reads as UTF-8, bad bytes replaced."""
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def to_text(content_type: str, data: bytes, charset: str | None = None) -> tuple[str | None, str]:
    """(text, note): text is None when the type cannot be converted, and the note says why."""
    try:
        if content_type == "text/plain":
            text = decode(data, charset)
        elif content_type == "text/html":
            text = html_to_text(decode(data, charset))
        elif content_type == "application/pdf":
            text = pdf_to_text(data)
        else:
            return None, f"cannot convert {content_type}"
    except Exception as exc:  # noqa: BLE001 - a broken document is recorded, not raised
        return None, f"conversion failed: {type(exc).__name__}: {exc}"[:500]
    return text.replace("\x00", "")[:MAX_TEXT], ""
