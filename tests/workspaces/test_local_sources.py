"""Folders of this machine: a repository is read from a local path or a ``file://`` URL only
under ``REPOSITORY_LOCAL_ROOTS`` (none in production), never from the working folders under
``REPOSITORIES_ROOT`` (another record's checkout) or the platform's own code; each record's
working folder is its own and goes, through a ``checkout.remove`` job run by a real worker,
when the record is deleted."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from jobs.models import Job
from tests.support.git_repos import Origin
from tests.support.waiting import wait_for
from workspaces import local_sources
from workspaces.errors import NotReady, RepositoryRefused
from workspaces.models import Organization, Repository
from workspaces.services import checkouts, ingest

from .factories import RepositoryFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # git, and a worker


@pytest.fixture(autouse=True)
def repositories_root(settings, tmp_path) -> Path:
    settings.REPOSITORIES_ROOT = tmp_path / "checkouts"
    settings.REPOSITORY_LOCAL_ROOTS = [tmp_path / "allowed"]
    (tmp_path / "allowed").mkdir()
    return settings.REPOSITORIES_ROOT


@pytest.fixture
def origin(tmp_path) -> Origin:
    origin = Origin(tmp_path / "allowed" / "origin")
    origin.commit({"main.py": "print()\n", ".env": "TOKEN=x\n"})
    return origin


def _refused(repository: Repository, words: str) -> str:
    with pytest.raises(RepositoryRefused, match=words):
        ingest.ingest_repository(repository.pk)
    error = Repository.objects.get(pk=repository.pk).ingest_error
    assert error
    return error


@pytest.mark.parametrize("how", ["local_path", "file_url", "absolute_path"])
def test_ingest__a_host_folder_outside_the_roots_is_refused(how, tmp_path):
    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    fields = {
        "local_path": {"local_path": str(tmp_path / "home")},
        "file_url": {"url": (tmp_path / "home").as_uri()},
        "absolute_path": {"url": str(tmp_path / "home")},
    }[how]
    repository = RepositoryFactory(metadata={}, **fields)

    _refused(repository, "outside the folders repositories may be read from")
    assert Repository.objects.get(pk=repository.pk).paths == []


def test_ingest__no_host_folder_at_all_with_productions_empty_roots(settings, origin):
    settings.REPOSITORY_LOCAL_ROOTS = []
    _refused(RepositoryFactory(url=origin.url, metadata={}), "REPOSITORY_LOCAL_ROOTS is empty")
    _refused(RepositoryFactory(local_path=str(origin.work), metadata={}), "REPOSITORY_LOCAL_ROOTS is empty")


def test_ingest__a_link_inside_a_root_does_not_lead_out_of_it(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "allowed" / "door").symlink_to(tmp_path / "outside")
    _refused(RepositoryFactory(local_path=str(tmp_path / "allowed" / "door"), metadata={}), "outside")
    _refused(
        RepositoryFactory(local_path=str(tmp_path / "allowed" / ".." / "outside"), metadata={}), "outside"
    )


def test_ingest__another_records_checkout_is_never_read_even_under_an_allowed_root(
    settings, tmp_path, origin, repositories_root
):
    settings.REPOSITORY_LOCAL_ROOTS = [tmp_path]  # a root that holds the working folders
    first = RepositoryFactory(url=origin.url, metadata={})
    ingest.ingest_repository(first.pk)
    first.refresh_from_db()
    checkout = repositories_root / first.checkout_folder
    assert (checkout / "main.py").is_file()

    for fields in ({"local_path": str(checkout)}, {"url": checkout.as_uri()}, {"local_path": str(tmp_path)}):
        error = _refused(RepositoryFactory(metadata={}, **fields), "REPOSITORIES_ROOT")
        assert "is, or holds, the platform's working folders" in error


def test_ingest__the_platforms_own_code_is_never_read(settings):
    settings.REPOSITORY_LOCAL_ROOTS = ["/"]
    _refused(RepositoryFactory(local_path=str(django_settings.BASE_DIR), metadata={}), "own code")
    _refused(RepositoryFactory(local_path="/", metadata={}), "holds")


def test_local_sources__a_root_set_inside_the_platforms_folder_admits_only_what_is_under_it(settings):
    demo = Path(django_settings.BASE_DIR) / "var" / "demo-git"  # make demo's, with DEBUG
    settings.REPOSITORY_LOCAL_ROOTS = [demo, "/"]
    assert local_sources.check(str(demo / "shop.git")) == demo.resolve() / "shop.git"
    with pytest.raises(local_sources.LocalPathRefused, match="own code"):
        local_sources.check(str(Path(django_settings.BASE_DIR) / "config"))


def test_ingest__a_folder_under_a_root_is_read(origin):
    repository = RepositoryFactory(local_path=str(origin.work), metadata={})
    ingest.ingest_repository(repository.pk)
    assert Repository.objects.get(pk=repository.pk).paths == [".env", "main.py"]


def test_admin__a_folder_outside_the_roots_is_a_form_error(admin_client, tmp_path):
    repository = RepositoryFactory(metadata={})
    change = reverse("admin:workspaces_repository_change", args=[repository.pk])
    form = {"workspace": repository.workspace_id, "name": "x", "metadata": "{}"}

    for field in ("local_path", "url"):
        response = admin_client.post(change, {**form, field: "/etc"})
        assert response.status_code == 200
        assert "outside the folders repositories may be read from" in response.content.decode()


# --- Working folders ------------------------------------------------------------------------


def test_checkout__a_record_with_a_reused_id_gets_a_folder_of_its_own(origin, repositories_root, tmp_path):
    first = RepositoryFactory(url=origin.url, metadata={})
    ingest.ingest_repository(first.pk)
    first.refresh_from_db()
    old_folder, pk = first.checkout_folder, first.pk
    # Its folder is left on disk, as one would be if its removal had not run yet.
    Repository.objects.filter(pk=pk).delete()
    Job.objects.filter(type="checkout.remove").delete()

    other = Origin(tmp_path / "allowed" / "other")
    other.commit({"other.py": "print()\n"})
    second = RepositoryFactory(pk=pk, url=other.url, metadata={})
    ingest.ingest_repository(second.pk)

    second.refresh_from_db()
    assert second.checkout_folder != old_folder and second.checkout_folder.startswith(f"{pk}-")
    assert second.paths == ["other.py"]
    assert (repositories_root / old_folder / "main.py").is_file()  # untouched, and not read


def test_checkout__a_folder_named_by_id_alone_is_queued_for_removal_and_not_reused(origin, repositories_root):
    repository = RepositoryFactory(url=origin.url, metadata={})
    legacy = repositories_root / str(repository.pk)
    (legacy / "leftover").mkdir(parents=True)  # a folder of the days before per-record names
    (legacy / "leftover" / "secret.py").write_text("KEY = 1\n")

    ingest.ingest_repository(repository.pk)

    repository.refresh_from_db()
    assert repository.checkout_folder != str(repository.pk)
    assert "leftover/secret.py" not in repository.paths
    assert Job.objects.get(type="checkout.remove").payload == {"folder": str(repository.pk)}


def test_checkout__a_name_that_is_not_a_working_folders_is_refused(repositories_root):
    for name in ["..", "../etc", "12/../../x", "", "12-zz"]:
        with pytest.raises(NotReady, match="Not the name of a working folder"):
            checkouts.remove(name)


@pytest.mark.django_db(transaction=True)
def test_delete__an_organization_or_repository_has_a_worker_remove_their_checkouts(
    origin, repositories_root, start_worker, tmp_path
):
    kept = RepositoryFactory(url=origin.url, metadata={})
    gone = RepositoryFactory(url=origin.url, metadata={})
    other_org = [RepositoryFactory(url=origin.url, metadata={}) for _ in range(2)]
    RepositoryFactory(workspace=other_org[0].workspace, metadata={})  # never fetched: no folder
    for repository in [kept, gone, *other_org]:
        ingest.ingest_repository(repository.pk)
    folders = {
        r.pk: repositories_root / Repository.objects.get(pk=r.pk).checkout_folder
        for r in [kept, gone, *other_org]
    }
    assert all(folder.is_dir() for folder in folders.values())

    Repository.objects.get(pk=gone.pk).delete()
    Organization.objects.get(pk=other_org[0].workspace.organization_id).delete()
    other_org[1].refresh_from_db()
    Organization.objects.get(pk=other_org[1].workspace.organization_id).delete()

    queued = sorted(Job.objects.filter(type="checkout.remove").values_list("payload__folder", flat=True))
    assert queued == sorted(folders[r.pk].name for r in [gone, *other_org])
    worker = start_worker(
        "--burst", "--queue", "ingestion:1", env={"REPOSITORIES_ROOT": str(repositories_root)}
    )
    assert worker.wait(timeout=120) == 0
    wait_for(
        lambda: (
            set(Job.objects.filter(type="checkout.remove").values_list("status", flat=True)) == {"succeeded"}
        ),
        timeout=60,
        message="the removals to succeed",
    )
    assert [pk for pk, folder in folders.items() if folder.exists()] == [kept.pk]
