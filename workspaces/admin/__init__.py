"""Admin for the workspace domain, one module per group of pages (as ``jobs/admin/`` is).

Each record's page shows what the background jobs did to it ("Recent jobs", through
``jobs.RecordJobsMixin``) and has buttons that queue more: Re-index, Analyse and Sync now
(repository), Provision (workspace), Purge (organization), Ask for a test plan and Capsule
summary (pull request); Accept and Reject answer a proposed decision. List actions do the
same for many rows and, like the buttons, need the change permission; saving a new
repository or workspace queues its first job (``services.triggers``).

What the system writes is read, never typed in: trial reminders, AI artifacts, review
capsules, source items and the synced fields of pull requests cannot be added or edited
here, ingest results and ``created_at`` are read-only, and an AI artifact can be deleted
only once retention has blanked its bodies.
"""

from jobs import register_payload_link
from workspaces.admin import (  # noqa: F401 - each module registers its pages
    artifact_pages,
    connection_pages,
    organization_pages,
    repository_pages,
    workspace_pages,
)

register_payload_link("organization_id", "workspaces.organization", label="organization")
register_payload_link("workspace_id", "workspaces.workspace", label="workspace")
register_payload_link("repository_id", "workspaces.repository", label="repository")
register_payload_link("pull_request_id", "workspaces.pullrequest", label="pull request")
register_payload_link("connection_id", "workspaces.workconnection", label="connection")
