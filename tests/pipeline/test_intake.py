"""Intake on PostgreSQL: receive() and ``manage.py import_mail`` (.eml, mbox, Maildir)."""

from __future__ import annotations

import mailbox
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.models import Job
from pipeline import blobs, intake
from pipeline.errors import UnreadableEmail
from pipeline.models import EmailMessage, Status
from tests.pipeline import corpus

pytestmark = pytest.mark.django_db


def test_receive__stores_blob_row_and_one_deduplicated_job(blob_root: Path):
    received = intake.receive(corpus.plain(), source="test")
    email = received.email
    assert received.created and email.status == Status.RECEIVED
    assert email.message_id == "<plain-1@example.com>" and email.subject == "Invoice 42 for November"
    assert blobs.read(email.blob_name) == corpus.plain()
    assert (blob_root / email.blob_name).is_file()
    job = Job.objects.get(type="email.process")
    assert (
        job.payload == {"email_id": email.pk}
        and job.dedupe_key == f"email:{email.pk}"
        and job.queue == "mail"
    )
    # Enqueuing again while it waits gives back the same job.
    assert intake.enqueue_processing(email.pk).pk == job.pk


def test_receive__same_bytes_again_are_already_present_and_written_once(blob_root: Path):
    first = intake.receive(corpus.plain())
    again = intake.receive(corpus.plain())
    assert not again.created and again.email.pk == first.email.pk
    assert EmailMessage.objects.count() == 1 and Job.objects.count() == 1
    assert len(list(blob_root.rglob("*.eml"))) == 1


def test_receive__empty_input_is_unreadable():
    with pytest.raises(UnreadableEmail):
        intake.receive(b"  \r\n")
    assert not EmailMessage.objects.exists()


def test_receive__rolls_back_the_row_when_the_job_cannot_be_added(monkeypatch):
    monkeypatch.setattr(
        intake.jobs, "enqueue", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("queue down"))
    )
    with pytest.raises(RuntimeError):
        intake.receive(corpus.plain())
    assert not EmailMessage.objects.exists()


def test_import_mail__reads_eml_mbox_and_maildir_and_counts(tmp_path: Path):
    (tmp_path / "one.eml").write_bytes(corpus.plain())
    (tmp_path / "empty.eml").write_bytes(b"")
    box = mailbox.mbox(str(tmp_path / "box.mbox"))
    box.add(corpus.html_only())
    box.add(corpus.latin1())
    box.close()
    maildir = mailbox.Maildir(str(tmp_path / "Maildir"))
    maildir.add(corpus.no_message_id())
    maildir.add(corpus.plain())  # already present through one.eml
    out, err = StringIO(), StringIO()
    call_command(
        "import_mail",
        str(tmp_path / "one.eml"),
        str(tmp_path / "empty.eml"),
        str(tmp_path / "box.mbox"),
        str(tmp_path / "Maildir"),
        str(tmp_path / "missing.eml"),
        stdout=out,
        stderr=err,
    )
    assert out.getvalue().strip() == "4 imported, 1 already present, 2 unreadable"
    assert "empty.eml" in err.getvalue() and "missing.eml" in err.getvalue()
    assert EmailMessage.objects.count() == 4
    assert Job.objects.filter(type="email.process").count() == 4


def test_import_mail__a_folder_of_eml_files_goes_on_after_a_bad_one(tmp_path: Path, monkeypatch):
    for index, raw in enumerate([corpus.plain(), corpus.garbage(), corpus.html_only()]):
        (tmp_path / f"{index}.eml").write_bytes(raw)
    original = Path.read_bytes

    def flaky(path: Path) -> bytes:
        if path.name == "1.eml":
            raise PermissionError("permission denied")
        return original(path)

    monkeypatch.setattr(Path, "read_bytes", flaky)
    out = StringIO()
    call_command("import_mail", str(tmp_path), stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == "2 imported, 0 already present, 1 unreadable"
