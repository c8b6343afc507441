"""The engine's migration history: the squashed 0003 stands in for the two migrations that
were both numbered 0003, and the workspace keys are rewritten with their prefix."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from jobs.models import Job, Status

pytestmark = pytest.mark.django_db

SQUASHED = ("platform", "0003_claim_any_and_admin_indexes")
REPLACED = [("platform", "0003_claim_any_index"), ("platform", "0003_admin_indexes")]


def test_squashed_0003__a_database_that_applied_the_old_pair_has_nothing_to_run():
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied(*SQUASHED)
    for app, name in REPLACED:  # as the history reads on a database migrated before
        recorder.record_applied(app, name)

    executor = MigrationExecutor(connection)
    executor.loader.check_consistent_history(connection)
    assert SQUASHED in executor.loader.applied_migrations
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    executor.check_replacements()  # what ``migrate`` does first: records the squash
    assert SQUASHED in recorder.applied_migrations()


KEYS = importlib.import_module("workspaces.migrations.0002_job_keys_name_their_subject")


def _job(type_name: str, payload: dict, key: str | None, status: str = Status.QUEUED) -> Job:
    return Job.objects.create(type=type_name, queue="default", payload=payload, dedupe_key=key, status=status)


def test_key_migration__prefixes_bare_ids_of_every_status_and_only_those():
    ingest = _job("repository.ingest", {"repository_id": 7}, "7")
    finished = _job("workmanagement.sync", {"connection_id": 3}, "3", Status.SUCCEEDED)
    purge_all = _job("retention.purge", {}, None)
    custom = _job("repository.analyse", {"repository_id": 7}, "custom")
    email = _job("email.process", {"email_id": 7}, "email:7")

    KEYS.prefix_keys(apps, None)

    keys = dict(Job.objects.values_list("pk", "dedupe_key"))
    assert keys == {
        ingest.pk: "repository:7",
        finished.pk: "connection:3",
        purge_all.pk: None,
        custom.pk: "custom",
        email.pk: "email:7",
    }
    KEYS.strip_prefixes(apps, None)  # and back
    assert Job.objects.get(pk=ingest.pk).dedupe_key == "7"
    assert Job.objects.get(pk=finished.pk).dedupe_key == "3"


def test_key_migration__leaves_an_active_row_whose_prefixed_twin_is_already_active():
    old = _job("repository.ingest", {"repository_id": 7}, "7")
    new = _job("repository.ingest", {"repository_id": 7}, "repository:7")
    KEYS.prefix_keys(apps, None)  # would break the unique index of active keys otherwise
    assert Job.objects.get(pk=old.pk).dedupe_key == "7"
    assert Job.objects.get(pk=new.pk).dedupe_key == "repository:7"
