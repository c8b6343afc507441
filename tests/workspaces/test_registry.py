"""The eleven job types of the background-jobs page, declared with the page's queue and
attempts, and beside them the platform's own housekeeping type and the steps of its
workflows."""

import pytest

from jobs import registry

SEED_TABLE = {
    "repository.ingest": ("ingestion", 3),
    "repository.analyse": ("ai", 2),
    "ai.workflow": ("ai", 2),
    "pullrequest.sync": ("default", 3),
    "checks.sync": ("default", 3),
    "workmanagement.sync": ("default", 3),
    "brain.derive": ("ai", 2),
    "decisions.mine": ("ai", 2),
    "workspace.provision": ("ingestion", 2),
    "capsules.retrospective": ("ingestion", 2),
    "retention.purge": ("default", 2),
}
# Not on the page: a deleted repository's working folder removed where the checkouts are;
# and the steps of the workspace workflows (a workspace marked ready, a pull request's capsule).
HOUSEKEEPING = {
    "checkout.remove": ("ingestion", 3),
    "workspace.ready": ("ingestion", 2),
    "capsule.build": ("ingestion", 2),
}


@pytest.mark.parametrize(("name", "expected"), sorted(SEED_TABLE.items()))
def test_job_type__has_the_seeds_queue_and_attempts(name, expected):
    job_type = registry.get(name)
    assert (job_type.queue, job_type.attempts) == expected


def test_workspaces_tasks__declare_exactly_the_eleven_types_the_housekeeping_one_and_the_steps():
    declared = {t.name for t in registry.all_types() if t.func.__module__ == "workspaces.tasks"}
    assert declared == set(SEED_TABLE) | set(HOUSEKEEPING)
    for name, (queue, attempts) in HOUSEKEEPING.items():
        assert (registry.get(name).queue, registry.get(name).attempts) == (queue, attempts)


def test_job_types__use_the_default_backoff_of_30s_2m_8m_capped_at_30m():
    for name in SEED_TABLE:
        job_type = registry.get(name)
        assert [job_type.delay_after(n) for n in (1, 2, 3, 4)] == [30, 120, 480, 1800]
