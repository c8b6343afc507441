"""The test corpus of issue 4, generated (written for this project): each entry is raw
bytes and the business status the spec gives it after processing."""

from __future__ import annotations

import base64
import os
import zlib
from dataclasses import dataclass
from email.message import EmailMessage as MimeMessage
from email.policy import SMTP


def _pdf_file(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the catalogue first) with its xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (enough for pypdf to extract it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return _pdf_file(objects)


def _message(
    subject: str, *, message_id: str | None, sender: str = "Alice <alice@example.com>"
) -> MimeMessage:
    msg = MimeMessage()
    msg["From"] = sender
    msg["To"] = "inbox@example.org"
    msg["Subject"] = subject
    msg["Date"] = "Sun, 29 Nov 2026 10:00:00 +0000"
    if message_id:
        msg["Message-ID"] = message_id
    return msg


def plain(
    subject: str = "Invoice 42 for November", message_id: str | None = "<plain-1@example.com>"
) -> bytes:
    msg = _message(subject, message_id=message_id)
    msg.set_content("Hello,\n\nplease find the invoice below. Payment due in 14 days.\n")
    return msg.as_bytes(policy=SMTP)


def html_only() -> bytes:
    msg = _message("Our weekly newsletter", message_id="<html-1@example.com>")
    msg.set_content(
        "<html><head><style>p {color: red}</style></head><body><h1>News</h1>"
        "<p>Big&nbsp;news this week.</p><p><a href='#'>Unsubscribe</a></p></body></html>",
        subtype="html",
    )
    return msg.as_bytes(policy=SMTP)


def multipart_with_attachments(message_id: str = "<multi-1@example.com>") -> bytes:
    msg = _message("Quarterly report and meeting agenda", message_id=message_id)
    msg.set_content("See the attached report and agenda.")
    msg.add_attachment(
        minimal_pdf("Quarterly revenue grew strongly"),
        maintype="application",
        subtype="pdf",
        filename="report.pdf",
    )
    msg.add_attachment(
        "<html><body><p>Agenda: budget review</p></body></html>", subtype="html", filename="agenda.html"
    )
    msg.add_attachment(
        b"\x89PNG\r\n\x1a\n" + os.urandom(64), maintype="image", subtype="png", filename="logo.png"
    )
    return msg.as_bytes(policy=SMTP)


def latin1() -> bytes:
    body = "Sehr geehrte Damen und Herren,\n\nanbei die Rechnung für März. Grüße aus Köln.\n"
    return (
        b"From: =?iso-8859-1?q?J=FCrgen_M=FCller?= <jm@example.de>\r\n"
        b"To: inbox@example.org\r\n"
        b"Subject: =?iso-8859-1?q?Rechnung_f=FCr_M=E4rz?=\r\n"
        b"Message-ID: <latin1-1@example.de>\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-8859-1\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n" + body.replace("\n", "\r\n").encode("latin-1")
    )


def shift_jis_rfc2047() -> bytes:
    subject = "=?utf-8?b?" + base64.b64encode("会議の議題 meeting".encode()).decode() + "?="
    body = "明日の会議について。agenda attached.\n".encode("shift_jis")
    return (
        b"From: =?utf-8?q?Tar=C5=8D?= <taro@example.jp>\r\n"
        b"To: inbox@example.org\r\n"
        b"Subject: " + subject.encode() + b"\r\n"
        b"Message-ID: <sjis-1@example.jp>\r\n"
        b"MIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=shift_jis\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n" + body
    )


def unknown_charset() -> bytes:
    return (
        b"From: x@example.com\r\nSubject: strange charset\r\nMessage-ID: <charset-1@example.com>\r\n"
        b"Content-Type: text/plain; charset=x-no-such-charset\r\n\r\nHello \xff\xfe world, help please\r\n"
    )


def no_message_id() -> bytes:
    return plain(subject="Meeting tomorrow (no id)", message_id=None)


def duplicate_of_plain() -> bytes:
    """Same Message-ID as ``plain()``, delivered again through another relay."""
    return (
        b"Received: from relay2.example.net by mx.example.org; Sun, 29 Nov 2026 10:05:00 +0000\r\n" + plain()
    )


def truncated_mime() -> bytes:
    full = multipart_with_attachments(message_id="<truncated-1@example.com>")
    return full[: len(full) // 2]  # cut in the middle of the PDF's base64, no closing boundary


def garbage() -> bytes:
    return bytes(range(256)) * 8 + b"\x00\xff garbage"


def huge_attachment(megabytes: int = 20) -> bytes:
    msg = _message("Big backup file", message_id="<huge-1@example.com>")
    msg.set_content("The backup is attached.")
    msg.add_attachment(
        b"\x00" * (megabytes * 1024 * 1024),
        maintype="application",
        subtype="octet-stream",
        filename="backup.bin",
    )
    return msg.as_bytes(policy=SMTP)


@dataclass(frozen=True)
class HeaderCase:
    name: str
    raw: bytes
    message_id: str
    sender: str
    subject: str


def awkward_headers() -> list[HeaderCase]:
    """Headers that are easy to read two ways: encoded words, folded lines, missing ones."""
    return [
        HeaderCase(
            "encoded_words",
            b"From: =?iso-8859-1?q?J=FCrgen_M=FCller?= <jm@example.de>\r\n"
            b"Subject: =?utf-8?b?R3LDvMOfZQ==?= =?utf-8?q?_aus_K=C3=B6ln?=\r\n"
            b"Message-ID: <Enc-1@Example.DE>\r\n\r\nHallo\r\n",
            "<Enc-1@example.de>",
            "Jürgen Müller <jm@example.de>",
            "Grüße aus Köln",
        ),
        HeaderCase(
            "folded_lines",
            b'From: "M\xc3\xbcller, J\xc3\xbcrgen"\r\n <jm@example.de>\r\n'
            b"Subject: A subject long enough\r\n that it continues\r\n\tover three lines\r\n"
            b"Message-ID:\r\n <folded-1@example.com>\r\n\r\nbody\r\n",
            "<folded-1@example.com>",
            '"Müller, Jürgen" <jm@example.de>',
            "A subject long enough that it continues\tover three lines",
        ),
        HeaderCase(
            "folded_encoded_words",
            b"From: a@example.com\r\nSubject: =?utf-8?q?Rechnung_f=C3=BCr?=\r\n =?utf-8?q?_M=C3=A4rz?=\r\n"
            b"Message-ID: <fe-1@example.com>\r\n\r\nbody\r\n",
            "<fe-1@example.com>",
            "a@example.com",
            "Rechnung für März",
        ),
        HeaderCase(
            "missing_headers",
            b"To: inbox@example.org\r\nContent-Type: text/plain\r\n\r\nNo sender, no subject, no id.\r\n",
            "",
            "",
            "",
        ),
        HeaderCase(
            "broken_encoded_words",
            b"From: =?x-no-such-charset?q?Bob?= <bob@example.com>\r\n"
            b"Subject: =?utf-8?q?never_closed\r\n\r\nbody\r\n",
            "",
            "Bob <bob@example.com>",
            "=?utf-8?q?never_closed",
        ),
        HeaderCase(
            "raw_8bit",
            b"From: J\xc3\xbcrgen <j@example.de>\r\nSubject: Caf\xe9 cr\xc3\xa8me\r\n"
            b"Message-ID: <8bit-1@example.de>\r\n\r\nbody\r\n",
            "<8bit-1@example.de>",
            "Jürgen <j@example.de>",
            "Caf\ufffd crème",
        ),
        HeaderCase(
            "repeated_headers",
            b"From: first@example.com\r\nFrom: second@example.com\r\n"
            b"Subject: one\r\nSubject: two\r\n\r\nbody\r\n",
            "",
            "first@example.com",
            "one",
        ),
    ]


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    status: str  # the business status the spec gives it


def cases(huge: bool = True) -> list[Case]:
    found = [
        Case("plain", plain(), "labelled"),
        Case("html_only", html_only(), "labelled"),
        Case("multipart", multipart_with_attachments(), "labelled"),
        Case("latin1", latin1(), "labelled"),
        Case("shift_jis_rfc2047", shift_jis_rfc2047(), "labelled"),
        Case("unknown_charset", unknown_charset(), "labelled"),
        Case("no_message_id", no_message_id(), "labelled"),
        Case("duplicate", duplicate_of_plain(), "duplicate"),
        Case("truncated_mime", truncated_mime(), "labelled"),
        Case("garbage", garbage(), "labelled"),
    ]
    if huge:
        found.append(Case("huge", huge_attachment(), "labelled"))
    return found


# --- hostile input ----------------------------------------------------------------------------


def _b64(data: bytes) -> bytes:
    return base64.b64encode(data)


def nul_headers() -> bytes:
    """From, Subject (encoded words) and Message-ID that decode to NUL characters, and a
    subject word in the ``unicode_escape`` codec that decodes to a lone surrogate."""
    return (
        b"From: =?utf-8?q?Mallory=00_Doe?= <mallory@example.com>\r\n"
        b"To: inbox@example.org\r\n"
        b"Subject: =?utf-8?b?" + _b64(b"Invoice\x00 42") + b"?= =?unicode_escape?q?\\ud800end?=\r\n"
        b"Message-ID: =?utf-8?q?<nul=00-1@example.com>?=\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
        b"Please pay the invoice.\r\n"
    )


def text_email(content_type: bytes, body: bytes, *, encoding: bytes = b"", name: str = "x") -> bytes:
    """A one-part email with the given Content-Type line, transfer encoding and body."""
    head = (
        b"From: sender@example.com\r\nTo: inbox@example.org\r\n"
        b"Subject: hostile " + name.encode() + b"\r\n"
        b"Message-ID: <hostile-" + name.encode() + b"@example.com>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: " + content_type + b"\r\n"
    )
    if encoding:
        head += b"Content-Transfer-Encoding: " + encoding + b"\r\n"
    return head + b"\r\n" + body


def with_attachment(content_type: bytes, body: bytes, *, disposition: bytes, name: str) -> bytes:
    """A body and one base64 attachment with the given Content-Type and Content-Disposition."""
    return (
        b"From: sender@example.com\r\nTo: inbox@example.org\r\nSubject: hostile " + name.encode() + b"\r\n"
        b"Message-ID: <hostile-" + name.encode() + b"@example.com>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=BOUNDARY\r\n\r\n"
        b"--BOUNDARY\r\nContent-Type: text/plain\r\n\r\nSee the attachment, please help.\r\n"
        b"--BOUNDARY\r\nContent-Type: " + content_type + b"\r\nContent-Disposition: " + disposition + b"\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + _b64(body) + b"\r\n--BOUNDARY--\r\n"
    )


def bogus_charsets() -> dict[str, bytes]:
    """Bodies and attachments that the standard library's decoders raise on, or that decode
    to what PostgreSQL cannot store (NUL, lone surrogates)."""
    words = "Grüße, please help".encode()
    return {
        "undefined": text_email(b"text/plain; charset=undefined", words, name="undefined"),
        "idna": text_email(b"text/plain; charset=idna", words, name="idna"),
        "nul_in_charset": text_email(b'text/plain; charset="utf-8\x00x"', words, name="nul-charset"),
        "encoded_nul_in_charset": text_email(
            b"text/plain; charset*=utf-8''utf-8%00x", words, name="encoded-nul-charset"
        ),
        "base64_unknown_charset": text_email(
            b"text/plain; charset=x-unknown-8", _b64(words), encoding=b"base64", name="b64-unknown"
        ),
        "base64_undefined": text_email(
            b"text/plain; charset=undefined", _b64(words), encoding=b"base64", name="b64-undefined"
        ),
        "html_idna": text_email(b"text/html; charset=idna", b"<p>" + words + b"</p>", name="html-idna"),
        "nul_in_body": text_email(b"text/plain; charset=utf-8", b"please\x00 help\x00", name="nul-body"),
        "escape_codec_body": text_email(
            b"text/plain; charset=unicode_escape", b"please help \\ud800 \\x00", name="escape-body"
        ),
        "attachment_undefined": with_attachment(
            b"text/plain; charset=undefined",
            words,
            disposition=b"attachment; filename=notes.txt",
            name="att-undefined",
        ),
        "attachment_escape_codec": with_attachment(
            b"text/plain; charset=unicode_escape",
            b"\\ud800\\x00 notes",
            disposition=b"attachment; filename=notes.txt",
            name="att-escape",
        ),
        "attachment_nul_names": with_attachment(
            b'text/plain; charset="utf\x00"; name="a\x00b.txt"',
            words,
            disposition=b"attachment; filename*=utf-8''n%00a%ED%A0%80me.txt",
            name="att-names",
        ),
    }


def nested(depth: int) -> bytes:
    """An email whose body is ``depth`` multiparts inside each other around one text part."""
    out = [b"From: sender@example.com\r\nSubject: nested\r\nMessage-ID: <nested-%d@example.com>\r\n" % depth]
    out.append(b"MIME-Version: 1.0\r\n")
    for level in range(depth):
        out.append(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (level, level))
    out.append(b"Content-Type: text/plain\r\n\r\nthe innermost part\r\n")
    out.extend(b"--b%d--\r\n" % level for level in reversed(range(depth)))
    return b"".join(out)


def many_parts(count: int) -> bytes:
    """An email with ``count`` small text attachments."""
    parts = b"".join(
        b"--BB\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=p%d.txt\r\n\r\n"
        b"part %d\r\n" % (number, number)
        for number in range(count)
    )
    return (
        b"From: sender@example.com\r\nSubject: many parts\r\nMessage-ID: <many-%d@example.com>\r\n" % count
        + b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=BB\r\n\r\n"
        + parts
        + b"--BB--\r\n"
    )


def pdf(contents: list[bytes], pages: list[int], *, compress: bool = True) -> bytes:
    """A PDF whose page ``n`` shows content stream ``pages[n]`` (an index into ``contents``):
    several pages may share one stream."""
    font = 3 + len(contents)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (font + 1 + number) for number in range(len(pages))), len(pages)),
    ]
    for content in contents:
        data = zlib.compress(content, 9) if compress else content
        flate = b" /Filter /FlateDecode" if compress else b""
        objects.append(b"<< /Length %d%s >>\nstream\n" % (len(data), flate) + data + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (3 + stream, font)
        for stream in pages
    ]
    return _pdf_file(objects)


def text_stream(*lines: str) -> bytes:
    """A content stream showing each line."""
    return b"".join(
        b"BT /F1 12 Tf 72 %d Td (%s) Tj ET\n" % (720 - 14 * n, line.encode()) for n, line in enumerate(lines)
    )


def shared_stream_pdf(pages: int = 40, operations: int = 250_000) -> bytes:
    """About 30 KB: ``pages`` pages that all show one content stream of ``operations``
    text operations (several megabytes once inflated)."""
    return pdf([b"BT /F1 1 Tf (ab) Tj ET\n" * operations], [0] * pages)


def email_with_pdf(data: bytes, name: str = "bomb") -> bytes:
    msg = _message(f"PDF {name}", message_id=f"<pdf-{name}@example.com>")
    msg.set_content("The document is attached.")
    msg.add_attachment(data, maintype="application", subtype="pdf", filename=f"{name}.pdf")
    return msg.as_bytes(policy=SMTP)
