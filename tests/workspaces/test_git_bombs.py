"""repository.ingest against hostile repositories: a few kilobytes that list or check out as
hundreds of thousands of entries, output past git's bound, and a flood of refs advertised.
Each fails the repository for good, with the limit named, before anything is checked out.
The repositories are real (built with ``git mktree``) and small; the limits are scaled down."""

from __future__ import annotations

import re

import pytest

import jobs
from tests.support.git_repos import ref_flood, tree_bomb
from workspaces.errors import RepositoryTooLarge
from workspaces.models import Repository
from workspaces.services import ingest

from .factories import RepositoryFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.usefixtures("repositories_root")]  # git


def _refused(url: str) -> tuple[Repository, RepositoryTooLarge]:
    repository = RepositoryFactory(url=url, metadata={})
    with pytest.raises(RepositoryTooLarge) as failure:
        ingest.ingest_repository(repository.pk)
    repository.refresh_from_db()
    assert isinstance(failure.value, jobs.PermanentError)  # another try cannot fix it
    assert repository.ingest_error == str(failure.value)
    return repository, failure.value


def _checked_out(repository: Repository) -> list[str]:
    folder = ingest.working_folder(repository)
    return sorted(path.name for path in folder.iterdir() if path.name != ".git") if folder.exists() else []


def test_ingest__a_tree_bomb_of_empty_files_is_refused_before_its_checkout(origin, settings):
    settings.REPOSITORY_MAX_ENTRIES = 1_000
    tree_bomb(origin, fan_out=10, depth=4)  # 10,000 empty files (and 1,110 folders) in 6 objects
    assert sum(f.stat().st_size for f in origin.bare.rglob("*") if f.is_file()) < 100_000

    repository, failure = _refused(origin.url)

    assert "more than 1,000 entries" in str(failure) and "REPOSITORY_MAX_ENTRIES" in str(failure)
    assert _checked_out(repository) == []
    assert repository.status == Repository.Status.NEW


def test_ingest__nested_empty_folders_that_weigh_nothing_are_counted_too(origin, settings):
    settings.REPOSITORY_MAX_ENTRIES = 1_000
    tree_bomb(origin, fan_out=10, depth=6, files=False)  # a million empty folders in 7 objects

    repository, failure = _refused(origin.url)

    assert "REPOSITORY_MAX_ENTRIES" in str(failure)
    assert _checked_out(repository) == []


def test_ingest__a_tree_within_the_entry_limit_is_still_read(origin, settings):
    settings.REPOSITORY_MAX_ENTRIES = 1_000
    tree_bomb(origin, fan_out=10, depth=2)  # 100 files and 10 folders

    repository = RepositoryFactory(url=origin.url, metadata={})
    ingest.ingest_repository(repository.pk)

    repository.refresh_from_db()
    assert (repository.status, repository.file_count) == (Repository.Status.INGESTED, 100)


def test_ingest__git_output_past_its_bound_stops_git_and_fails_the_repository(origin, settings):
    settings.GIT_MAX_OUTPUT_BYTES = 20_000
    origin.commit({f"{'long-name-' * 20}{i}.txt": "x\n" for i in range(100)})  # 100 × 200 characters

    repository, failure = _refused(origin.url)

    assert "more than 20,000 bytes of output (GIT_MAX_OUTPUT_BYTES)" in str(failure)
    assert _checked_out(repository) == []


def test_ingest__a_flood_of_refs_advertised_ends_in_gits_memory_limit(httpserver, settings):
    settings.GIT_MAX_MEMORY_BYTES = 48 * 1024 * 1024
    flood = ref_flood(100_000)  # 100,000 refs: a quarter of a megabyte, 6.6 MB inflated
    assert len(flood) < 400_000
    httpserver.expect_request(re.compile("^/flood.git/info/refs$")).respond_with_data(
        flood,
        headers={"Content-Encoding": "gzip"},
        content_type="application/x-git-upload-pack-advertisement",
    )

    repository, failure = _refused(httpserver.url_for("/flood.git"))

    assert "memory limit of 50,331,648 bytes (GIT_MAX_MEMORY_BYTES)" in str(failure)
    assert repository.commit_sha == ""
