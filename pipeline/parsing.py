"""The one parser of raw emails: the standard library's ``email`` package (``policy.default``),
tolerant of broken input: whatever cannot be read is recorded as a defect, never raised.

Each step reads an email once. Intake parses the headers only and stores their ``summary``
(Message-ID, sender, subject) on the email's row; processing parses the whole email once
(``parse``) and takes the summary from the row, so the two can never disagree.

Every string it returns can be stored (``storable.text``). The parser is bounded: an email
nested deeper than ``PIPELINE_MAX_MIME_DEPTH`` or made of more than ``PIPELINE_MAX_MIME_PARTS``
parts stops it at once with ``UnprocessableEmail``, a permanent error, as does anything else
the parser raises on (parsing the same bytes again fails the same way).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from email import policy
from email.header import decode_header, make_header
from email.message import EmailMessage as MimeMessage
from email.message import Message
from email.parser import BytesParser
from typing import Any

from django.conf import settings

from pipeline import convert, storable
from pipeline.errors import UnprocessableEmail

# Headers added in transit: two deliveries of one email differ only in these.
TRACE_HEADERS = {"received", "return-path", "delivered-to", "x-original-to", "x-received", "envelope-to"}
_ANGLE = re.compile(r"<([^<>]*)>")


@dataclass(frozen=True)
class Summary:
    message_id: str
    sender: str
    subject: str


@dataclass
class AttachmentPart:
    position: int
    filename: str
    content_type: str
    size: int
    text: str | None
    note: str


@dataclass
class Parsed:
    """What processing keeps of an email besides its summary: headers, text, attachments."""

    headers: list[tuple[str, str]]
    body_text: str
    defects: list[str]
    attachments: list[AttachmentPart] = field(default_factory=list)


def header(msg: Message, name: str) -> str:
    """A header as storable text; a value the policy cannot parse falls back to its raw form."""
    try:
        value = msg.get(name)
        return "" if value is None else storable.text(str(value))
    except Exception:  # noqa: BLE001 - a malformed header must not stop the pipeline
        for key, raw in msg.raw_items():
            if key.lower() == name.lower():
                return storable.text(_decode_raw(raw))
        return ""


def _decode_raw(raw: str) -> str:
    try:
        return str(make_header(decode_header(raw)))
    except Exception:  # noqa: BLE001
        return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def normalise_message_id(value: str) -> str:
    """``<Foo@Example.COM >`` → ``<Foo@example.com>``; empty when there is none."""
    match = _ANGLE.search(value)
    inner = (match.group(1) if match else value).strip()
    inner = "".join(inner.split())
    if not inner:
        return ""
    local, at, domain = inner.rpartition("@")
    return f"<{local}@{domain.lower()}>" if at else f"<{inner}>"


class _Budget:
    """What is left of one email's allowance of MIME parts, and how deep they may nest."""

    def __init__(self) -> None:
        self.parts_left = settings.PIPELINE_MAX_MIME_PARTS
        self.max_depth = settings.PIPELINE_MAX_MIME_DEPTH


class _BoundedPart(MimeMessage):
    """A MIME part as the parser builds it (``policy.message_factory``): it draws on its
    email's part budget when created, and knows its depth when attached to its parent, so
    the parser stops at the first part over a limit instead of reading the rest."""

    def __init__(self, policy: Any = None, *, budget: _Budget) -> None:
        super().__init__(policy)
        self._budget = budget
        self.depth = 1
        budget.parts_left -= 1
        if budget.parts_left < 0:
            raise UnprocessableEmail(
                f"The email has more than {settings.PIPELINE_MAX_MIME_PARTS:,} MIME parts "
                "(PIPELINE_MAX_MIME_PARTS)."
            )

    def attach(self, payload: Any) -> None:
        if isinstance(payload, _BoundedPart):
            payload.depth = self.depth + 1
            if payload.depth > self._budget.max_depth:
                raise UnprocessableEmail(
                    f"The email's MIME parts are nested more than {self._budget.max_depth} levels deep "
                    "(PIPELINE_MAX_MIME_DEPTH)."
                )
        super().attach(payload)


def read(raw: bytes, *, headers_only: bool = False) -> MimeMessage:
    """Raw bytes as a message: the only place the pipeline runs the parser.

    ``headers_only`` stops after the header block (the rest stays one unparsed payload);
    the headers come out exactly as in a full parse. Raises UnprocessableEmail when the
    email is over the MIME limits.
    """
    # Parts are built as _BoundedPart objects (email.message.EmailMessage, as policy.default
    # builds them) sharing one budget.
    bounded = policy.default.clone(message_factory=functools.partial(_BoundedPart, budget=_Budget()))
    parser = BytesParser(policy=bounded)
    return parser.parsebytes(raw, headersonly=headers_only)


def summary(raw: bytes) -> Summary:
    """Message-ID, sender and subject, from the headers alone (intake stores them)."""
    return summarize(read(raw, headers_only=True))


def summarize(msg: Message) -> Summary:
    """The header summary of a message already parsed (storable text)."""
    return Summary(
        message_id=normalise_message_id(header(msg, "message-id")),
        sender=header(msg, "from"),
        subject=header(msg, "subject"),
    )


def content_key(raw: bytes) -> str:
    """A hash of the normalised content: trace headers dropped, line ends and trailing
    blanks evened out, so two deliveries of one email without a Message-ID match.

    A fingerprint of the bytes, not a parse: it works on the raw lines because the parsed
    message does not keep them, and the keys already stored in ``Origin`` must still match.
    """
    text = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    head, _, body = text.partition(b"\n\n")
    kept: list[bytes] = []
    skipping = False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t"):  # continuation of the previous header
            if not skipping:
                kept.append(line.strip())
            continue
        name = line.split(b":", 1)[0].strip().lower().decode("ascii", "replace")
        skipping = name in TRACE_HEADERS
        if not skipping:
            kept.append(line.rstrip())
    lines = [line.rstrip() for line in body.split(b"\n")]
    while lines and not lines[-1]:
        lines.pop()
    digest = hashlib.sha256(b"\n".join(kept) + b"\n\n" + b"\n".join(lines)).hexdigest()
    return f"sha256:{digest}"


def parse(raw: bytes) -> Parsed:
    """Parse a whole email as far as it goes; defects are collected, not raised.

    Raises UnprocessableEmail (permanent) when the email is over the MIME limits or the
    parser fails on it. Text is kept up to ``PIPELINE_MAX_TEXT`` characters for the whole
    email: the body first, then the attachments in order.
    """
    try:
        return _parse(raw)
    except (UnprocessableEmail, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - the same bytes would fail the same way again
        reason = storable.text(f"{type(exc).__name__}: {exc}")[:500]
        raise UnprocessableEmail(f"The email cannot be parsed: {reason}") from None


def _parse(raw: bytes) -> Parsed:
    msg = read(raw)
    defects: list[str] = []
    for node in msg.walk():
        defects.extend(storable.text(f"{type(defect).__name__}: {defect}") for defect in node.defects)
    text_left = settings.PIPELINE_MAX_TEXT
    body_part = _body_part(msg, defects)
    body_text = _part_text(body_part, defects) if body_part is not None else ""
    if body_part is not None and body_part.get_content_type() == "text/html":
        body_text = convert.html_to_text(body_text)
    body_text = body_text[:text_left]
    text_left -= len(body_text)
    attachments = []
    for position, part in enumerate(_attachment_parts(msg, body_part)):
        attachment = _attachment(position, part, defects, text_left)
        text_left -= len(attachment.text or "")
        attachments.append(attachment)
    headers = [(storable.text(name), storable.text(value)) for name, value in _items(msg, defects)]
    return Parsed(
        headers=headers,
        body_text=body_text,
        defects=defects,
        attachments=attachments,
    )


def _items(msg: Message, defects: list[str]) -> list[tuple[str, str]]:
    items = []
    for name, raw in msg.raw_items():
        try:
            items.append((name, str(msg.policy.header_fetch_parse(name, raw))))
        except Exception as exc:  # noqa: BLE001
            defects.append(storable.text(f"HeaderDefect: {name}: {exc}"))
            items.append((name, _decode_raw(raw)))
    return items


def _body_part(msg: MimeMessage, defects: list[str]) -> Message | None:
    try:
        part = msg.get_body(preferencelist=("plain", "html"))
    except Exception as exc:  # noqa: BLE001
        defects.append(storable.text(f"BodyDefect: {exc}"))
        part = None
    if part is None and not msg.is_multipart() and msg.get_content_maintype() in ("text", ""):
        part = msg
    return part


def charset(part: Message) -> str | None:
    """The part's declared charset, lowercased; None when it has none or it cannot be read."""
    try:
        return part.get_content_charset()
    except Exception:  # noqa: BLE001 - an RFC 2231 charset value naming a codec with NUL…
        return None


def _part_text(part: Message, defects: list[str]) -> str:
    declared = charset(part)
    if declared is not None and convert.text_codec(declared) is None:
        # Python's decoders raise on these, or (unicode_escape) turn the body into escapes.
        defects.append(
            storable.text(f"CharsetDefect: cannot decode text in charset {declared!r}: read as UTF-8")
        )
        return convert.decode(_payload(part, defects), None)
    try:
        return storable.text(part.get_content())  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - a broken transfer encoding…
        defects.append(storable.text(f"ContentDefect: {type(exc).__name__}: {exc}"))
    return convert.decode(_payload(part, defects), declared)


def _payload(part: Message, defects: list[str]) -> bytes:
    try:
        payload = part.get_payload(decode=True) or b""
    except Exception as exc:  # noqa: BLE001
        defects.append(storable.text(f"PayloadDefect: {type(exc).__name__}: {exc}"))
        return b""
    if isinstance(payload, str):
        return payload.encode("utf-8", "surrogateescape")
    return payload if isinstance(payload, bytes) else b""


def _attachment_parts(msg: Message, body_part: Message | None) -> list[Message]:
    """Leaf parts other than the body; alternatives of the body are not attachments."""
    found: list[Message] = []

    def visit(part: Message, in_alternative: bool) -> None:
        if part.is_multipart():
            alternative = part.get_content_type() == "multipart/alternative"
            payload = part.get_payload()
            for child in payload if isinstance(payload, list) else []:
                if isinstance(child, Message):
                    visit(child, in_alternative or alternative)
            return
        if part is body_part:
            return
        if in_alternative and part.get_content_disposition() != "attachment":
            return
        found.append(part)

    if msg.is_multipart():
        visit(msg, False)
    return found


def _attachment(position: int, part: Message, defects: list[str], text_left: int) -> AttachmentPart:
    content_type = part.get_content_type()
    try:
        filename = part.get_filename() or ""
    except Exception:  # noqa: BLE001
        filename = ""
    payload = _payload(part, defects)
    if text_left <= 0 and content_type in ("text/plain", "text/html", "application/pdf"):
        text, note = None, "not converted: the email's text limit was reached (PIPELINE_MAX_TEXT)"
    else:
        text, note = convert.to_text(content_type, payload, charset(part), limit=max(text_left, 0))
    return AttachmentPart(
        position=position,
        filename=storable.text(filename)[:500],
        content_type=storable.text(content_type)[:200],
        size=len(payload),
        text=text,
        note=note,
    )
