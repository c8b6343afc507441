"""Each step reads an email once: intake hashes its bytes once and reads its headers once;
processing parses it once (a copy not at all) and leaves the sender and subject stored at
intake as they are."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from email.parser import Parser

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pipeline import intake, parsing, process
from pipeline.models import EmailMessage, Status
from tests.pipeline import corpus

pytestmark = pytest.mark.django_db


@dataclass
class Reads:
    """What was done with the bytes: each run of the email parser (True: headers only),
    each hash of the raw bytes, each content fingerprint."""

    raw: bytes
    parses: list[bool] = field(default_factory=list)
    hashes: int = 0
    fingerprints: int = 0

    def reset(self) -> None:
        self.parses.clear()
        self.hashes = self.fingerprints = 0


@pytest.fixture
def reads(monkeypatch) -> Reads:
    """Counts at the standard library: every entry point of the ``email`` package's parser
    (``message_from_bytes``, ``BytesParser``, ``BytesHeaderParser``…) ends in ``Parser.parse``,
    and every hash of the raw bytes is a ``hashlib.sha256`` over them."""
    found = Reads(raw=b"")
    parse, sha256, content_key = Parser.parse, hashlib.sha256, parsing.content_key

    def counting_parse(self, fp, headersonly=False):
        found.parses.append(headersonly)
        return parse(self, fp, headersonly)

    def counting_sha256(*args, **kwargs):
        if args and args[0] == found.raw:
            found.hashes += 1
        return sha256(*args, **kwargs)

    def counting_content_key(raw: bytes) -> str:
        found.fingerprints += 1
        return content_key(raw)

    monkeypatch.setattr(Parser, "parse", counting_parse)
    monkeypatch.setattr(hashlib, "sha256", counting_sha256)
    monkeypatch.setattr(parsing, "content_key", counting_content_key)
    return found


def test_receive__hashes_the_bytes_once_and_reads_the_headers_once(reads: Reads):
    reads.raw = corpus.multipart_with_attachments()
    assert intake.receive(reads.raw).created
    assert reads.hashes == 1
    assert reads.parses == [True]


def test_receive__same_bytes_again_are_hashed_once_and_not_parsed(reads: Reads):
    reads.raw = corpus.plain()
    intake.receive(reads.raw)
    reads.reset()
    assert not intake.receive(reads.raw).created
    assert (reads.hashes, reads.parses) == (1, [])


def test_process__parses_the_email_once(reads: Reads):
    email = intake.receive(corpus.multipart_with_attachments()).email
    reads.reset()
    assert process.process_email(email.pk) == "labelled"
    assert reads.parses == [False]
    assert reads.fingerprints == 0  # the Message-ID is the origin key


def test_process__an_email_without_message_id_is_parsed_once_and_fingerprinted_once(reads: Reads):
    email = intake.receive(corpus.no_message_id()).email
    reads.reset()
    assert process.process_email(email.pk) == "labelled"
    assert (reads.parses, reads.fingerprints) == ([False], 1)


def test_process__a_copy_is_not_parsed(reads: Reads):
    first = intake.receive(corpus.plain()).email
    copy = intake.receive(corpus.duplicate_of_plain()).email
    process.process_email(first.pk)
    reads.reset()
    assert process.process_email(copy.pk) == "duplicate"
    assert reads.parses == []


@pytest.mark.parametrize("case", corpus.awkward_headers(), ids=lambda case: case.name)
def test_process__keeps_the_sender_and_subject_stored_at_intake(case: corpus.HeaderCase):
    email = intake.receive(case.raw).email
    stored = EmailMessage.objects.values("message_id", "sender", "subject").get(pk=email.pk)
    assert stored == {"message_id": case.message_id, "sender": case.sender, "subject": case.subject}

    with CaptureQueriesContext(connection) as queries:
        process.process_email(email.pk)

    email.refresh_from_db()
    assert email.status == Status.LABELLED
    assert EmailMessage.objects.values("message_id", "sender", "subject").get(pk=email.pk) == stored
    quote = connection.ops.quote_name
    updates = [
        query["sql"]
        for query in queries
        if query["sql"].startswith(f"UPDATE {quote('pipeline_emailmessage')}")
    ]
    assert updates  # the status was written…
    summary_columns = tuple(f"{quote(column)} =" for column in ("message_id", "sender", "subject"))
    assert [sql for sql in updates if any(column in sql for column in summary_columns)] == []  # …nothing else
