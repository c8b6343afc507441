"""``manage.py migrate`` then ``manage.py demo`` on the embedded defaults (SQLite under a
fresh VAR_DIR, local blobs, local classifier): the README's first command. Its worker also
books and runs the three timers' slots, with nothing else scheduled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo__runs_on_the_embedded_defaults_with_no_environment(tmp_path: Path):
    out = run_demo("demo", tmp_path / "var", timeout=120)
    assert "9 imported, 0 already present, 1 unreadable" in out
    assert out.count("duplicate of #") == 1
    assert "Rechnung für März" in out
    assert "Jobs: 9 succeeded." in out
    # The index: every email but the copy has its points, and a search finds by meaning.
    index = out[out.index("5. The email index") :]
    assert "static embedding model shipped inside the wordllama package" in index
    assert "collection emails_local_wordllama-l2-supercat_256, 8 points." in index
    assert "Quarterly report and meeting agenda      → #6 Quarterly report and meeting agenda" in index
    first_hit = index.split('Search by meaning for "parcel on its way"')[1].splitlines()[1]
    assert "Your package has shipped" in first_hit
    # The seed's three timers, booked and run by the demo's worker alone.
    for timer in ("sweep", "reconcile", "trial_sweep"):
        assert re.search(
            rf"{timer} +slot \d\d:\d\d:\d\d UTC \((scheduled|catch-up)\): job #\d+ succeeded", out
        ), out
    assert (tmp_path / "var" / "platform.sqlite3").is_file()
    assert list((tmp_path / "var" / "blobs").rglob("*.eml"))
