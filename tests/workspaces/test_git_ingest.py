"""repository.ingest against real git repositories: built with ``git init``, commits,
branches and pushes, fetched over ``file://``, a local path and smart HTTP."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

import jobs
from tests.support.git_repos import Origin, git, http_backend
from tests.support.servers import SilentServer
from tests.support.waiting import wait_for
from workspaces.errors import RepositoryFetchFailed, RepositoryRefused, RepositoryTooLarge
from workspaces.models import Repository
from workspaces.services import ingest

from .factories import RepositoryFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("repositories_root")]  # git


def _ingest(url: str, **fields) -> Repository:
    repository = RepositoryFactory(url=url, metadata={}, **fields)
    ingest.ingest_repository(repository.pk)
    repository.refresh_from_db()
    return repository


def _rules(repository: Repository) -> dict[str, str]:
    return {finding["rule"]: finding["path"] for finding in repository.findings}


def test_ingest__clones_a_file_url_and_fetches_what_was_pushed_between_two_ingests(origin, repositories_root):
    first = origin.commit(
        {"manage.py": "import django\n", "app/models.py": "# TODO: fields\n", "old.py": "x = 1\n"}
    )
    repository = _ingest(origin.url)
    assert (repository.status, repository.commit_sha, repository.branch) == ("ingested", first, "main")
    assert repository.kind == "django-project"
    assert repository.paths == ["app/models.py", "manage.py", "old.py"]
    assert (repositories_root / repository.checkout_folder / "manage.py").is_file()  # its own working folder
    assert (
        git("rev-parse", "--is-shallow-repository", cwd=repositories_root / repository.checkout_folder)
        == "true"
    )

    second = origin.commit({"old.py": None, "tests/test_models.py": "def test(): pass\n"})
    ingest.ingest_repository(repository.pk)

    repository.refresh_from_db()
    assert repository.commit_sha == second != first
    assert repository.paths == ["app/models.py", "manage.py", "tests/test_models.py"]
    assert not (
        repositories_root / repository.checkout_folder / "old.py"
    ).exists()  # gone from the checkout too
    assert "quality.no-tests" not in _rules(repository)


def test_ingest__reads_a_local_bare_repository_by_path_and_only_its_default_branch(tmp_path):
    origin = Origin(tmp_path / "origin", branch="trunk")
    commit = origin.commit({"go.mod": "module x\n"})
    origin.branch_off("feature", {"feature.py": "print()\n"})

    repository = _ingest(str(origin.bare))

    assert (repository.commit_sha, repository.branch, repository.kind) == (commit, "trunk", "go-module")
    assert repository.paths == ["go.mod"]


def test_ingest__records_an_empty_repository_as_ingested_with_nothing_read(origin):
    repository = _ingest(origin.url)
    assert (repository.status, repository.file_count, repository.commit_sha) == ("ingested", 0, "")
    assert list(_rules(repository)) == ["repository.empty"]


def test_ingest__an_unreachable_url_is_retryable_and_recorded_on_the_repository():
    port = _closed_port()
    repository = RepositoryFactory(url=f"http://127.0.0.1:{port}/gone.git", metadata={})
    with pytest.raises(RepositoryFetchFailed, match="(?i)failed to connect|couldn't connect"):
        ingest.ingest_repository(repository.pk)
    repository.refresh_from_db()
    assert repository.status == "new" and "gone.git" in repository.ingest_error


def test_ingest__a_missing_repository_or_a_forbidden_transport_fails_permanently(tmp_path):
    with pytest.raises(RepositoryRefused, match="does not appear to be a git repository"):
        ingest.ingest_repository(RepositoryFactory(url=(tmp_path / "nothing").as_uri(), metadata={}).pk)
    for url in ["ext::sh -c touch% /tmp/pwned", "--upload-pack=touch /tmp/pwned", "relative/path"]:
        with pytest.raises(RepositoryRefused):
            ingest.ingest_repository(RepositoryFactory(url=url, metadata={}).pk)


def test_ingest__a_host_that_never_answers_is_stopped_at_the_timeout_with_no_git_left_running(settings):
    settings.GIT_TIMEOUT = 1
    silent = SilentServer()
    try:
        repository = RepositoryFactory(url=f"{silent.url}/slow.git", metadata={})
        with pytest.raises(RepositoryFetchFailed, match="did not finish within 1 s"):
            ingest.ingest_repository(repository.pk)
        assert silent.accepted  # git did reach it, and was stopped waiting
        assert _processes_mentioning(silent.url) == []
    finally:
        silent.close()


def test_ingest__a_checkout_over_the_size_limit_is_refused_before_it_is_written(
    origin, settings, repositories_root
):
    settings.REPOSITORY_MAX_BYTES = 100_000
    origin.commit({"big.txt": "a" * 300_000})  # compresses to a small pack, checks out big
    repository = RepositoryFactory(url=origin.url, metadata={})
    with pytest.raises(RepositoryTooLarge, match="300,000 bytes"):
        ingest.ingest_repository(repository.pk)
    assert not (repositories_root / repository.checkout_folder / "big.txt").exists()


def test_ingest__a_fetch_writing_past_the_size_limit_is_cut_off(origin, settings):
    settings.REPOSITORY_MAX_BYTES = 100_000
    origin.commit({"noise.bin": os.urandom(400_000)})  # incompressible: the pack itself is too big
    with pytest.raises(RepositoryTooLarge, match="REPOSITORY_MAX_BYTES"):
        ingest.ingest_repository(RepositoryFactory(url=origin.url, metadata={}).pk)


def test_ingest__never_follows_a_symlink_out_of_the_checkout(origin, tmp_path, repositories_root):
    secret = tmp_path / "outside.env"
    secret.write_text("AWS=AKIAABCDEFGHIJKLMNOP\n")
    origin.commit({"README.md": "# x\n", "docs/guide.md": "guide\n"})
    origin.link("leak.env", str(secret))
    origin.link("docs/up", "../../../outside.env")
    origin.link("docs/inside", "guide.md")

    repository = _ingest(origin.url)

    outside = {f["path"] for f in repository.findings if f["rule"] == "links.outside-checkout"}
    assert outside == {"leak.env", "docs/up"}
    assert "secrets.aws-key" not in _rules(repository)  # the target was never read
    assert repository.paths == ["README.md", "docs/guide.md"]
    assert not (
        repositories_root / repository.checkout_folder / "leak.env"
    ).is_symlink()  # core.symlinks=false


def test_ingest__a_local_folder_with_a_symlink_out_of_it_is_read_without_following_it(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keys.py").write_text("KEY = 'AKIAABCDEFGHIJKLMNOP'\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "main.py").write_text("print()\n")
    (folder / "keys.py").symlink_to(tmp_path / "outside" / "keys.py")
    (folder / "vendor").symlink_to(tmp_path / "outside")

    repository = RepositoryFactory(local_path=str(folder), metadata={})
    ingest.ingest_repository(repository.pk)

    repository.refresh_from_db()
    assert repository.paths == ["main.py"]
    assert {f["path"] for f in repository.findings if f["rule"] == "links.outside-checkout"} == {
        "keys.py",
        "vendor",
    }
    assert "secrets.aws-key" not in _rules(repository)


def test_ingest__fifty_thousand_files_are_counted_and_the_first_ones_read(origin, settings):
    settings.REPOSITORY_MAX_FILES = 20_000
    settings.GIT_TIMEOUT = 600  # a checkout of 50,000 files on a busy machine; not what is tested here
    origin.many_files(50_000)

    repository = _ingest(origin.url)

    assert repository.file_count == 50_000
    assert len(repository.paths) == ingest.MAX_PATHS
    assert repository.paths[0] == "pkg000/module_00000.py"
    assert "50,000 files: the first 20,000" in next(
        f["message"] for f in repository.findings if f["rule"] == "ingest.files-not-read"
    )


def test_ingest__text_and_names_that_are_not_utf8_are_recorded_and_still_scanned(origin):
    origin.commit({"legacy.py": "# caf\xe9 TODO\n".encode("latin-1"), "ok.py": "x = 1\n"})
    name = os.fsdecode(b"r\xe9sum\xe9.txt")  # a Latin-1 file name
    (origin.work / name).write_text("plain\n")
    git("add", "--all", cwd=origin.work)
    git("commit", "--quiet", "-m", "latin-1 name", cwd=origin.work)
    git("push", "--quiet", "origin", "main", cwd=origin.work)

    repository = _ingest(origin.url)

    findings = {(f["rule"], f["path"]) for f in repository.findings}
    assert ("encoding.not-utf8", "legacy.py") in findings
    assert ("debt.markers", "legacy.py") in findings  # read with replacement characters
    assert ("encoding.path-not-utf8", "r\ufffdsum\ufffd.txt") in findings
    assert "r\ufffdsum\ufffd.txt" in repository.paths


def test_ingest__no_hooks_and_no_global_config_take_part(origin, monkeypatch, tmp_path, repositories_root):
    origin.commit({"a.py": "x = 1\n"})
    repository = _ingest(origin.url)
    marker = tmp_path / "hook-ran"
    hook = repositories_root / repository.checkout_folder / ".git" / "hooks" / "post-checkout"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[url "file:///nowhere/"]\n\tinsteadOf = file:///\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    origin.commit({"b.py": "y = 2\n"})

    ingest.ingest_repository(repository.pk)

    repository.refresh_from_db()
    assert repository.paths == ["a.py", "b.py"]
    assert not marker.exists()


def test_ingest__a_credential_in_the_url_is_sent_as_a_header_and_never_stored_or_shown(
    httpserver, tmp_path, monkeypatch, caplog
):
    origin = Origin(tmp_path / "served")
    commit = origin.commit({"main.py": "print()\n"})
    seen: list[dict[str, str]] = []
    httpserver.expect_request(re.compile("^/")).respond_with_handler(
        http_backend(tmp_path / "served", "ada:s3cret-token", seen)
    )
    argv: list[str] = []
    real_popen = subprocess.Popen

    def recording_popen(args, *rest, **kwargs):
        argv.extend(map(str, args))
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    caplog.set_level(logging.DEBUG)
    url = httpserver.url_for("/origin.git").replace("http://", "http://ada:s3cret-token@")

    repository = _ingest(url)

    assert repository.commit_sha == commit
    assert repository.url == httpserver.url_for("/origin.git").replace("http://", "http://***@")
    assert "s3cret" not in repository.credential  # encrypted at rest
    assert any(headers.get("Authorization", "").startswith("Basic ") for headers in seen)
    assert not any("s3cret" in arg for arg in argv)
    assert "s3cret" not in caplog.text
    assert (
        "s3cret" not in (tmp_path / "checkouts" / repository.checkout_folder / ".git" / "config").read_text()
    )


def test_ingest__a_refused_credential_fails_at_once_without_showing_it(httpserver, tmp_path):
    Origin(tmp_path / "served").commit({"main.py": "print()\n"})
    httpserver.expect_request(re.compile("^/")).respond_with_handler(
        http_backend(tmp_path / "served", "ada:right-token", [])
    )
    url = httpserver.url_for("/origin.git").replace("http://", "http://ada:wrong-token@")
    repository = RepositoryFactory(url=url, metadata={})
    with pytest.raises(RepositoryRefused) as failure:
        ingest.ingest_repository(repository.pk)
    repository.refresh_from_db()
    assert "wrong-token" not in str(failure.value) and "wrong-token" not in repository.ingest_error
    assert repository.ingest_error


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.django_db(transaction=True)
def test_ingest__git_dies_with_a_worker_that_is_killed_mid_fetch(start_worker, tmp_path):
    silent = SilentServer()
    try:
        repository = RepositoryFactory(url=f"{silent.url}/hangs.git", metadata={})
        jobs.enqueue("repository.ingest", {"repository_id": repository.pk})
        worker = start_worker(
            "--concurrency", "1", env={"GIT_TIMEOUT": "600", "REPOSITORIES_ROOT": str(tmp_path / "checkouts")}
        )
        wait_for(
            lambda: silent.accepted and _processes_mentioning(silent.url),
            timeout=60,
            message="git to connect",
        )

        worker.kill_all()  # the machine loses the task: supervisor and job child at once

        wait_for(lambda: not _processes_mentioning(silent.url), timeout=20, message="git to exit")
    finally:
        silent.close()
