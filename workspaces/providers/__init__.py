"""Where pull requests, CI checks and work items come from.

Two small interfaces, ``CodeHost`` and ``WorkTracker``, each with a default that reads
what is already stored (repository metadata, the connection's last webhook snapshot), so
the jobs run with no network. A real client, or the in-memory fakes of the tests, is
swapped in with ``use_code_host`` / ``use_work_tracker``.
"""

from workspaces.providers.base import (
    ChecksData,
    CodeHost,
    PullRequestData,
    WorkItemData,
    WorkTracker,
    code_host,
    use_code_host,
    use_work_tracker,
    work_tracker,
)

__all__ = [
    "ChecksData",
    "CodeHost",
    "PullRequestData",
    "WorkItemData",
    "WorkTracker",
    "code_host",
    "use_code_host",
    "use_work_tracker",
    "work_tracker",
]
