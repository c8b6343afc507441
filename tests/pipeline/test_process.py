"""The ``email.process`` steps in-process on the database (PostgreSQL or MariaDB), and its error classes: indexing
outage, model timeout, invalid model answer (botocore Stubber), an unexpected exception."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection

from pipeline import classify, intake, process, search, switch
from pipeline.errors import EmailMissing, ModelCallError
from pipeline.models import (
    Attachment,
    EmailMessage,
    ErrorLogEntry,
    IndexRecord,
    Origin,
    ParsedEmail,
    PipelineRun,
    RunOutcome,
    Status,
)
from tests.pipeline import corpus
from tests.support.bedrock import converse_answer, stubbed_bedrock
from tests.support.concurrency import run_at_once
from tests.support.database import on_mariadb, raw_connection
from tests.support.servers import SilentServer
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db


def _email(raw: bytes | None = None) -> EmailMessage:
    return intake.receive(raw or corpus.multipart_with_attachments()).email


def test_process__runs_every_step_to_labelled():
    email = _email()
    steps: list[tuple[float, str]] = []
    assert process.process_email(
        email.pk, progress=lambda percent, message: steps.append((percent, message))
    ) == ("labelled")
    email.refresh_from_db()
    assert email.status == Status.LABELLED and email.labels == ["meeting"]
    assert {part.filename: part.converted for part in email.attachments.all()} == {
        "report.pdf": True,
        "agenda.html": True,
        "logo.png": False,
    }
    assert email.classification.model == "local-rules"
    assert "Quarterly revenue" in email.index_record.text
    run = email.runs.get()
    assert run.outcome == RunOutcome.LABELLED and run.closed_at and run.classified
    assert [percent for percent, _ in steps] == sorted(percent for percent, _ in steps) and steps[-1][
        0
    ] == 100


# Committed: InnoDB applies a FULLTEXT index's changes at commit, so a search inside the
# writing transaction does not see them (PostgreSQL's GIN index does).
@pytest.mark.django_db(transaction=True)
def test_search__finds_emails_by_their_text():
    email = _email()
    other = _email(corpus.latin1())
    process.process_email(email.pk)
    process.process_email(other.pk)
    assert connection.vendor in ("postgresql", "mysql")  # the database's full-text index
    assert list(search.search("revenue")) == [email]
    assert list(search.search("Köln")) == [other]


def test_process__a_copy_is_linked_to_its_origin_and_finishes_there(monkeypatch):
    raw = corpus.multipart_with_attachments()
    first, copy = _email(raw), _email(b"Received: from relay2.example.net by mx.example.org\r\n" + raw)
    process.process_email(first.pk)
    assert first.attachments.count() == 3  # what a copy would get converted, were it processed
    monkeypatch.setattr(classify, "classify", lambda *a: pytest.fail("a copy must not reach the model"))
    assert process.process_email(copy.pk) == "duplicate"
    copy.refresh_from_db()
    assert copy.status == Status.DUPLICATE and copy.origin_id == first.pk
    # No documents converted: no parsed artifact, no attachment.
    assert not ParsedEmail.objects.filter(email=copy).exists()
    assert not Attachment.objects.filter(email=copy).exists()
    assert copy.runs.get().outcome == RunOutcome.DUPLICATE
    assert Origin.objects.get().email_id == first.pk


def test_process__email_without_message_id_gets_a_content_origin():
    email = _email(corpus.no_message_id())
    process.process_email(email.pk)
    assert Origin.objects.get(email=email).key.startswith("sha256:")


@pytest.mark.parametrize("name", sorted(corpus.bogus_charsets()))
def test_process__bogus_charsets_and_nul_are_processed_to_the_end(name):
    email = _email(corpus.bogus_charsets()[name])
    assert process.process_email(email.pk) == "labelled"
    email.refresh_from_db()
    assert email.status == Status.LABELLED and "help" in email.parsed.body_text
    assert not ErrorLogEntry.objects.exists()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(
            corpus.nested(3000), "nested more than 50 levels deep (PIPELINE_MAX_MIME_DEPTH)", id="deep"
        ),
        pytest.param(
            corpus.many_parts(33_000), "more than 1,000 MIME parts (PIPELINE_MAX_MIME_PARTS)", id="parts"
        ),
    ],
)
def test_process__an_email_over_the_mime_limits_fails_for_good_marked_and_logged(raw, reason):
    from jobs import PermanentError

    email = _email(raw)
    with pytest.raises(PermanentError, match=re.escape(reason)):
        process.process_email(email.pk, job_id=3)
    email.refresh_from_db()
    assert email.status == Status.FAILED and email.needs_review
    run = email.runs.get()
    assert run.outcome == RunOutcome.FAILED and not run.is_open and reason in run.last_error
    error = ErrorLogEntry.objects.get()
    assert (error.error_class, error.email_id, error.job_id) == (
        "pipeline.errors.UnprocessableEmail",
        email.pk,
        3,
    )
    assert reason in error.text
    assert not Attachment.objects.filter(email=email).exists()


@pytest.mark.django_db(transaction=True)
def test_process__two_copies_at_once_end_with_one_origin():
    first, copy = _email(corpus.plain()), _email(corpus.duplicate_of_plain())
    outcomes = run_at_once(lambda: process.process_email(first.pk), lambda: process.process_email(copy.pk))
    assert sorted(outcomes) == ["duplicate", "labelled"]
    origin = Origin.objects.get()
    assert EmailMessage.objects.get(status=Status.DUPLICATE).origin_id == origin.email_id


def test_process__missing_row_is_a_permanent_error():
    with pytest.raises(EmailMissing) as caught:
        process.process_email(999_999)
    from jobs.errors import PermanentError

    assert isinstance(caught.value, PermanentError)


def test_process__model_calls_off_leaves_the_run_open_never_classified(monkeypatch):
    switch.set_model_calls(False)
    email = _email()
    assert process.process_email(email.pk) == process.WAITING
    email.refresh_from_db()
    run = email.runs.get()
    assert email.status == Status.PARSED and run.is_open and not run.classified
    assert not hasattr(email, "classification") or not email.labels


def test_indexing_outage__marks_partially_indexed_and_finishes_what_it_can(monkeypatch):
    def unreachable(email_id: int, text: str) -> None:
        raise OperationalError("could not connect to the search index")

    monkeypatch.setattr(search, "_write", unreachable)
    email = _email()
    assert process.process_email(email.pk, job_id=77) == "partially_indexed"
    email.refresh_from_db()
    assert email.status == Status.PARTIALLY_INDEXED and email.labels == ["meeting"]
    error = ErrorLogEntry.objects.get()
    assert error.error_class == "pipeline.errors.IndexingError" and error.job_id == 77
    assert "could not connect" in error.text and error.email_id == email.pk
    assert email.runs.get().outcome == RunOutcome.PARTIALLY_INDEXED


@contextmanager
def _index_write_fails(settings, email: EmailMessage) -> Iterator[str]:
    """The email's real index write fails in the database; yields what its error says.

    PostgreSQL: the tsvector's text search configuration does not exist. MariaDB: another
    session is writing the email's index row (without checking its foreign key, so it
    holds no lock on the email itself) and this one waits for no row lock."""
    if not on_mariadb():
        settings.SEARCH_CONFIG = "no_such_search_config"
        yield "no_such_search_config"
        return
    writer = raw_connection(autocommit=False)
    writer.execute("SET SESSION foreign_key_checks = 0")
    writer.execute("INSERT INTO pipeline_indexrecord (email_id, text) VALUES (%s, 'in flight')", [email.pk])
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.innodb_lock_wait_timeout")
        (waits,) = cursor.fetchone()
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 0")
    try:
        yield "Lock wait timeout exceeded"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [waits])
        writer.rollback()
        writer.close()


def test_indexing_failure_inside_the_database__rolls_back_only_the_index_step(settings):
    email = _email()
    with _index_write_fails(settings, email) as error_text:
        assert process.process_email(email.pk) == "partially_indexed"
    email.refresh_from_db()
    assert email.status == Status.PARTIALLY_INDEXED and email.labels == ["meeting"]
    assert email.classification.labels == ["meeting"]
    assert not IndexRecord.objects.filter(email=email).exists()
    assert error_text in ErrorLogEntry.objects.get().text


def test_unexpected_exception__fails_the_email_logs_it_and_is_raised_for_a_retry(monkeypatch):
    def broken(*args: object) -> None:
        raise RuntimeError("converter exploded")

    monkeypatch.setattr(process.classify, "classify", broken)
    email = _email()
    with pytest.raises(RuntimeError):
        process.process_email(email.pk, job_id=5)
    email.refresh_from_db()
    assert email.status == Status.FAILED
    error = ErrorLogEntry.objects.get()
    assert (error.error_class, error.text, error.job_id) == ("RuntimeError", "converter exploded", 5)
    run = email.runs.get()
    assert run.is_open and "converter exploded" in run.last_error
    # The retry starts from the top and succeeds once the cause is gone.
    monkeypatch.undo()
    assert process.process_email(email.pk) == "labelled"
    assert PipelineRun.objects.filter(email=email).count() == 1


# --- Bedrock --------------------------------------------------------------------------------


@pytest.fixture
def bedrock(settings, monkeypatch):
    with stubbed_bedrock(settings, monkeypatch) as stubber:
        yield stubber


def test_bedrock__a_valid_answer_gives_the_labels(bedrock):
    bedrock.add_response("converse", converse_answer('{"labels": ["report", "meeting"]}'))
    email = _email()
    assert process.process_email(email.pk) == "labelled"
    email.refresh_from_db()
    assert email.labels == ["meeting", "report"]
    assert email.classification.model == "test-model"
    bedrock.assert_no_pending_responses()


def test_bedrock__an_answer_with_a_lone_surrogate_is_stored_clean(bedrock):
    bedrock.add_response("converse", converse_answer('{"labels": ["invoice"], "why": "\ud800"}'))
    email = _email()
    assert process.process_email(email.pk) == "labelled"
    email.refresh_from_db()
    assert email.classification.raw_response == '{"labels": ["invoice"], "why": "\ufffd"}'


def test_bedrock__an_invalid_answer_is_a_model_call_error(bedrock):
    bedrock.add_response("converse", converse_answer("Sure! The labels are: meeting"))
    email = _email()
    with pytest.raises(ModelCallError) as caught:
        process.process_email(email.pk, job_id=9)
    from jobs.errors import RetryableError

    assert isinstance(caught.value, RetryableError)
    email.refresh_from_db()
    assert email.status == Status.FAILED
    error = ErrorLogEntry.objects.get()
    assert error.error_class == "pipeline.errors.ModelCallError" and "not JSON" in error.text
    assert email.runs.get().is_open and not email.runs.get().classified


def test_bedrock__a_service_error_is_a_model_call_error(bedrock):
    bedrock.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)
    with pytest.raises(ModelCallError, match="ThrottlingException"):
        process.process_email(_email().pk)


def test_model_timeout__is_a_model_call_error(settings, silent_server: SilentServer, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    settings.MODEL_PROVIDER = "bedrock"
    settings.BEDROCK_ENDPOINT_URL = silent_server.url
    settings.MODEL_TIMEOUT = 0.3
    email = _email()
    with pytest.raises(ModelCallError, match="timed out"):
        process.process_email(email.pk)
    wait_for(lambda: silent_server.accepted, timeout=5, message="the model call reached the server")
    email.refresh_from_db()
    assert email.status == Status.FAILED
    assert ErrorLogEntry.objects.get().error_class == "pipeline.errors.ModelCallError"
