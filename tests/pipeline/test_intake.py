"""Intake on PostgreSQL: receive() and ``manage.py import_mail`` (.eml, mbox, Maildir)."""

from __future__ import annotations

import mailbox
import os
import stat
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.models import Job
from pipeline import blobs, intake
from pipeline.errors import UnreadableEmail
from pipeline.models import EmailMessage, Status
from tests.pipeline import corpus
from tests.support.paths import ROOT

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
    assert out.getvalue().strip() == "4 imported, 1 already present, 2 unreadable, 0 too large"
    assert "empty.eml" in err.getvalue() and "missing.eml" in err.getvalue()
    assert EmailMessage.objects.count() == 4
    assert Job.objects.filter(type="email.process").count() == 4


def test_import_mail__a_folder_of_eml_files_goes_on_after_a_bad_one(tmp_path: Path, monkeypatch):
    for index, raw in enumerate([corpus.plain(), corpus.garbage(), corpus.html_only()]):
        (tmp_path / f"{index}.eml").write_bytes(raw)
    from pipeline import sources

    original = sources._open

    def flaky(path: Path):
        if path.name == "1.eml":
            raise PermissionError("permission denied")
        return original(path)

    monkeypatch.setattr(sources, "_open", flaky)
    out = StringIO()
    call_command("import_mail", str(tmp_path), stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == "2 imported, 0 already present, 1 unreadable, 0 too large"


# --- hostile input ----------------------------------------------------------------------------


def _stored_safely(value: str) -> bool:
    return "\x00" not in value and not any("\ud800" <= char <= "\udfff" for char in value)


def test_receive__header_strings_are_stored_without_nul_or_lone_surrogates():
    email = intake.receive(corpus.nul_headers(), source="in\udcffbox/\x00one.eml").email
    email.refresh_from_db()
    assert email.subject == "Invoice 42\ufffdend"
    assert email.sender == "Mallory Doe <mallory@example.com>"
    assert email.message_id == "<nul-1@example.com>"
    assert email.source == "in\ufffdbox/one.eml"
    assert Job.objects.filter(type="email.process", dedupe_key=f"email:{email.pk}").exists()


def test_process__an_email_with_nul_headers_is_processed_with_clean_artifacts():
    from pipeline import process

    email = intake.receive(corpus.nul_headers()).email
    assert process.process_email(email.pk) == "labelled"
    email.refresh_from_db()
    assert all(_stored_safely(name) and _stored_safely(value) for name, value in email.parsed.headers)
    assert "Invoice 42" in email.index_record.text


def _folder(tmp_path: Path, *emails: bytes) -> Path:
    folder = tmp_path / "mail"
    folder.mkdir()
    for index, raw in enumerate(emails):
        (folder / f"{index}.eml").write_bytes(raw)
    return folder


def _import(*paths: Path) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_mail", *map(str, paths), stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def test_import_mail__an_email_with_nul_headers_does_not_stop_the_others(tmp_path: Path):
    folder = _folder(tmp_path, corpus.plain(), corpus.nul_headers(), corpus.html_only())
    assert _import(folder)[0] == "3 imported, 0 already present, 0 unreadable, 0 too large"
    assert _import(folder)[0] == "0 imported, 3 already present, 0 unreadable, 0 too large"
    assert EmailMessage.objects.count() == 3


def test_import_mail__an_email_that_cannot_be_stored_is_unreadable_and_leaves_no_blob(
    tmp_path: Path, blob_root: Path, monkeypatch
):
    from pipeline import storable

    # Without the cleaning, PostgreSQL refuses the NUL characters of this email's headers.
    monkeypatch.setattr(storable, "text", lambda value: value)
    folder = _folder(tmp_path, corpus.plain(), corpus.nul_headers(), corpus.html_only())
    summary, err = _import(folder)
    assert summary == "2 imported, 0 already present, 1 unreadable, 0 too large"
    assert "1.eml" in err and "cannot be stored" in err
    assert len(list(blob_root.rglob("*.eml"))) == 2  # no blob without its row
    # A rerun goes past it again.
    assert _import(folder)[0] == "0 imported, 2 already present, 1 unreadable, 0 too large"


def test_import_mail__does_not_follow_links_out_of_the_folder(tmp_path: Path):
    outside = tmp_path / "elsewhere"
    (outside / "Maildir" / "cur").mkdir(parents=True)
    (outside / "secret.eml").write_bytes(corpus.plain(subject="secret file"))
    (outside / "Maildir" / "cur" / "1.host:2,").write_bytes(corpus.plain(subject="secret maildir"))
    folder = _folder(tmp_path, corpus.html_only())
    (folder / "leak.eml").symlink_to(outside / "secret.eml")
    (folder / "leaks").symlink_to(outside)
    maildir = folder / "Maildir"
    for sub in ("new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    (maildir / "cur").symlink_to(outside / "Maildir" / "cur")
    summary, err = _import(folder)
    assert summary == "1 imported, 0 already present, 3 unreadable, 0 too large"
    assert err.count("not followed") == 3
    assert not EmailMessage.objects.filter(subject__startswith="secret").exists()


def test_import_mail__a_link_inside_the_folder_is_followed_and_no_folder_is_read_twice(tmp_path: Path):
    folder = _folder(tmp_path, corpus.html_only())
    (folder / "sub").mkdir()
    (folder / "sub" / "one.eml").write_bytes(corpus.latin1())
    (folder / "again").symlink_to(folder / "sub")
    (folder / "self").symlink_to(folder)
    (folder / "alias.eml").symlink_to(folder / "sub" / "one.eml")
    summary, _ = _import(folder)
    assert summary == "2 imported, 1 already present, 0 unreadable, 0 too large"
    assert EmailMessage.objects.filter(subject="Rechnung für März").count() == 1


def _sparse(path: Path, size: int, head: bytes = b"") -> None:
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)  # a hole: costs no disk, reads as zeros


def test_import_mail__emails_over_the_size_limit_are_refused_before_they_are_read(tmp_path: Path, settings):
    import tracemalloc

    settings.PIPELINE_MAX_EMAIL_BYTES = 1024 * 1024
    big = 64 * 1024 * 1024
    folder = _folder(tmp_path, corpus.plain())
    _sparse(folder / "big.eml", big, b"From: a@example.com\r\nSubject: big\r\n\r\n")
    box = folder / "box.mbox"
    _sparse(box, big, b"From a@example.com Sun Nov 29 10:00:00 2026\nSubject: big\n\n")
    with box.open("ab") as handle:  # a small message after the big one
        handle.write(
            b"\nFrom b@example.com Sun Nov 29 10:00:00 2026\n" + corpus.html_only().replace(b"\r\n", b"\n")
        )
    maildir = mailbox.Maildir(str(folder / "Maildir"))
    maildir.add(corpus.latin1())
    _sparse(folder / "Maildir" / "new" / "2.big:2,", big, b"Subject: big\r\n\r\n")
    tracemalloc.start()
    try:
        summary, err = _import(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary == "3 imported, 0 already present, 0 unreadable, 3 too large"
    assert err.count("PIPELINE_MAX_EMAIL_BYTES") == 3
    assert peak < big / 4, f"{peak} bytes in memory at the peak: an oversized email was read"
    assert not EmailMessage.objects.filter(subject="big").exists()


def test_receive__refuses_an_email_over_the_size_limit(settings):
    from pipeline.errors import EmailTooLarge

    settings.PIPELINE_MAX_EMAIL_BYTES = 1000
    with pytest.raises(EmailTooLarge, match="PIPELINE_MAX_EMAIL_BYTES"):
        intake.receive(corpus.plain() + b"x" * 1000)
    assert not EmailMessage.objects.exists()


# --- manage.py import_mail as its own process -------------------------------------------------


def _import_mail_process(env: dict[str, str], *paths: Path) -> subprocess.CompletedProcess:
    """``manage.py import_mail`` with the settings a deployment would read; a walk that never
    ends fails the test at the deadline."""
    return subprocess.run(
        [sys.executable, "manage.py", "import_mail", *map(str, paths)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_import_mail__self_referencing_links_do_not_make_the_walk_endless(tmp_path: Path, worker_env):
    folder = _folder(tmp_path, corpus.plain())
    (folder / "loop-a").symlink_to(folder)
    (folder / "loop-b").symlink_to(".")
    result = _import_mail_process(worker_env, folder)
    assert result.stdout.strip() == "1 imported, 0 already present, 0 unreadable, 0 too large", result.stderr


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_import_mail__a_fifo_in_the_folder_is_skipped_not_waited_on(tmp_path: Path, worker_env):
    folder = _folder(tmp_path, corpus.plain())
    os.mkfifo(folder / "pipe.eml")  # opening it to read would wait for a writer for ever
    result = _import_mail_process(worker_env, folder)
    assert result.stdout.strip() == "1 imported, 0 already present, 1 unreadable, 0 too large", result.stderr
    assert "pipe.eml: not a regular file" in result.stderr


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_import_mail__raw_emails_are_private_files_in_private_folders(tmp_path: Path, worker_env, blob_root):
    folder = _folder(tmp_path, corpus.plain(), corpus.html_only())
    assert not blob_root.exists()
    result = _import_mail_process(worker_env, folder)
    assert result.returncode == 0, result.stderr
    folders = [blob_root, *(path for path in blob_root.rglob("*") if path.is_dir())]
    files = [path for path in blob_root.rglob("*") if path.is_file()]
    assert len(files) == 2 and len(folders) >= 3  # blobs/, blobs/emails/, blobs/emails/<xx>/
    assert {oct(stat.S_IMODE(path.stat().st_mode)) for path in folders} == {"0o700"}
    assert {oct(stat.S_IMODE(path.stat().st_mode)) for path in files} == {"0o600"}
