"""The names of the workspace job types, each spelled once: ``workspaces/tasks.py`` declares
its types under these, and the services, webhooks, admin and commands enqueue and look jobs
up by them. (The declarations cannot be imported there: they import the services.) The
names are stored in rows, so never rename one; add a new name."""

INGEST_REPOSITORY = "repository.ingest"
ANALYSE_REPOSITORY = "repository.analyse"
AI_WORKFLOW = "ai.workflow"
SYNC_PULL_REQUESTS = "pullrequest.sync"
SYNC_CHECKS = "checks.sync"
SYNC_WORK_CONNECTION = "workmanagement.sync"
DERIVE_BRAIN = "brain.derive"
MINE_DECISIONS = "decisions.mine"
PROVISION_WORKSPACE = "workspace.provision"
BUILD_CAPSULES = "capsules.retrospective"
# Steps of the workflows above (``jobs.start``): the workspace marked ready once its
# repositories are ingested, and one merged pull request's capsule.
MARK_WORKSPACE_READY = "workspace.ready"
BUILD_CAPSULE = "capsule.build"
PURGE_RETAINED_BODIES = "retention.purge"
# Not on the background-jobs page: a deleted repository's working folder removed.
REMOVE_CHECKOUT = "checkout.remove"
