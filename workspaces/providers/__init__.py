"""Where pull requests, CI checks and work items come from.

Two small interfaces, ``CodeHost`` and ``WorkTracker``. ``CODE_HOST=github`` selects the
GitHub REST API (``github.py``); ``WORK_TRACKER=api`` selects each connection's provider by
its kind (``jira.py``, ``clickup.py``, ``monday.py``); all of them call out over the one HTTP
convention of ``http.py``. The embedded default of each reads what is already stored
(repository metadata, the connection's snapshot) and says so in its label, so the jobs run
with no network. The interfaces and their data are in ``base.py``, the choice of
implementation in ``selection.py``; a test swaps in its own (``tests/support/providers.py``'s
in-memory fakes) with ``use_code_host`` / ``use_work_tracker``.
"""

from workspaces.providers.base import (
    ChecksData,
    CodeHost,
    PullRequestChanges,
    PullRequestData,
    WorkItemData,
    WorkTracker,
)
from workspaces.providers.selection import code_host, use_code_host, use_work_tracker, work_tracker

__all__ = [
    "ChecksData",
    "CodeHost",
    "PullRequestChanges",
    "PullRequestData",
    "WorkItemData",
    "WorkTracker",
    "code_host",
    "use_code_host",
    "use_work_tracker",
    "work_tracker",
]
