"""``manage.py demo_workspace`` on the embedded defaults (SQLite under a fresh VAR_DIR, the
stored code host): a real local git repository ingested twice, around a push."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo_workspace__ingests_a_local_git_repository_and_syncs_from_the_embedded_host(tmp_path: Path):
    out = run_demo("demo_workspace", tmp_path / "var")
    commits = re.findall(r"commit ([0-9a-f]{12}) on main, django-project", out)
    assert len(commits) == 2 and commits[0] != commits[1]  # the second ingest fetched the push
    assert (
        "shop/payments.py" not in out.split("2. A push")[0]
        and "shop/payments.py" in out.split("2. A push")[1]
    )
    assert "Code host: stored snapshot (embedded default" in out
    assert "#2 open    We decided to switch to Stripe for payments (bob), CI success, approved by ada" in out
    assert "failed" not in out
    # The provisioning workflow, with its graph column by column.
    assert "workflow #1 workspace.provision succeeded, 4 of 4 steps succeeded:" in out
    graph = out.split("4 of 4 steps succeeded:")[1].split("its page, with the graph")[0]
    assert [line.strip() for line in graph.strip().splitlines()] == [
        "#1 repository.ingest[repository:1] succeeded",
        "→ #2 workspace.ready[workspace:1] succeeded",
        "→ #3 brain.derive[repository:1] succeeded",
        "→ #4 decisions.mine[workspace:1] succeeded",
    ]
    assert (tmp_path / "var" / "repositories").is_dir()
