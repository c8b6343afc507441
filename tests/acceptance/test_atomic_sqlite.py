"""Atomic jobs on the embedded default, SQLite: the same fenced completion, written through
the ORM, commits with the handler's writes, is refused for a try taken back, and runs under
``runworker --burst``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow

IN_PROCESS = """
import json
from jobs import store, testing
from tests.jobs_app.models import Execution

raced = store.enqueue("test.write_atomic", {})
[first] = store.claim("w1", ["default"], 1)
store.recover_worker("w1")  # as the reaper does for a silent worker
second = testing.run_job(raced)  # try 2, to its end
late = testing.run_claimed(first, "w1")  # try 1, finishing late: refused by the fence
failing = testing.run_job(store.enqueue("test.write_atomic", {"fail": "boom"}))
print(json.dumps({
    "raced": [second.status, second.attempts, late.status, late.attempts, late.locked_by],
    "raced_rows": list(Execution.objects.filter(job_id=raced.pk).values_list("attempt", flat=True)),
    "failed": [failing.status, failing.error],
    "failed_rows": Execution.objects.filter(job_id=failing.pk).count(),
}))
store.enqueue_many("test.write_atomic", [{} for _ in range(20)])
"""

AFTER_BURST = """
import json
from collections import Counter
from jobs.models import Job
from tests.jobs_app.models import Execution
burst = list(Job.objects.filter(type="test.write_atomic").order_by("id").values_list("id", "status"))[2:]
rows = Counter(Execution.objects.filter(job_id__in=[i for i, _ in burst]).values_list("job_id", flat=True))
print(json.dumps({"statuses": sorted({s for _, s in burst}), "rows": sorted(set(rows.values())), "jobs": len(rows)}))
"""


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_atomic_jobs__commit_once_and_are_fenced_on_sqlite(tmp_path: Path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'platform.sqlite3'}",
        "VAR_DIR": str(tmp_path),
        "LOG_LEVEL": "WARNING",
    }
    _manage(env, "migrate", "-v0")

    report = json.loads(_manage(env, "shell", "-c", IN_PROCESS).strip().splitlines()[-1])
    assert report == {
        "raced": ["succeeded", 2, "succeeded", 2, "jobs.testing"],  # the late try changed nothing
        "raced_rows": [2],
        "failed": ["queued", "RuntimeError: boom"],
        "failed_rows": 0,
    }

    _manage(env, "runworker", "--burst", "--concurrency", "2")
    burst = json.loads(_manage(env, "shell", "-c", AFTER_BURST).strip().splitlines()[-1])
    assert burst == {"statuses": ["succeeded"], "rows": [1], "jobs": 20}
