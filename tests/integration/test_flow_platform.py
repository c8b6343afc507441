"""The platform's own limits (workspaces/tasks.py): a repository ingested by one job at a
time, a repository's code-host syncs one at a time (they share its token), a tracker
connection synced once at a time; each key apart, so other repositories run beside."""

from __future__ import annotations

import pytest

from jobs import registry, store
from jobs.flow import admission
from workspaces import job_types

pytestmark = pytest.mark.django_db(transaction=True)


def _claim(queue: str) -> list[tuple[str, str]]:
    rules = admission.Rules(queues={}, type_limits=registry.limits_of)
    claimed = store.claim_flowed("w", [queue], 20, rules, keyed_only=True).jobs
    return sorted((job.type, job.payload) for job in claimed)


def test_code_host_syncs__one_at_a_time_per_repository_any_number_of_repositories():
    for repository_id in (1, 2):
        store.enqueue(job_types.SYNC_PULL_REQUESTS, {"repository_id": repository_id})
        store.enqueue(job_types.SYNC_CHECKS, {"repository_id": repository_id})
    store.enqueue(job_types.SYNC_WORK_CONNECTION, {"connection_id": 5})
    taken = _claim("default")
    assert [payload for _, payload in taken if "repository_id" in payload] == [
        '{"repository_id": 1}',
        '{"repository_id": 2}',
    ]  # one sync of each repository: its pull requests or its checks, not both
    assert (job_types.SYNC_WORK_CONNECTION, '{"connection_id": 5}') in taken


def test_ingest__one_job_per_repository_at_a_time():
    limits = registry.get(job_types.INGEST_REPOSITORY).limits
    assert limits is not None and limits.concurrency == 1
    assert limits.keys(job_types.INGEST_REPOSITORY, {"repository_id": 7}) == ("repository:7", None)
    store.enqueue(job_types.INGEST_REPOSITORY, {"repository_id": 7})
    store.enqueue(job_types.INGEST_REPOSITORY, {"repository_id": 8})
    assert len(_claim("ingestion")) == 2
