"""``manage.py runworker`` refuses bad options before it starts anything. No database."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from jobs.management.commands.runworker import parse_lane


@pytest.mark.parametrize(
    "spec, lane",
    [("ai:2", (["ai"], 2)), ("default", (["default"], 1)), ("default:10", (["default"], 10))],
)
def test_parse_lane__reads_name_and_slots(spec, lane):
    assert parse_lane(spec) == lane


@pytest.mark.parametrize("spec", ["ai:0", "ai:00", "ai:-1", "ai:x", ":2", "ai:1.5", ""])
def test_parse_lane__refuses_anything_but_name_and_at_least_one_slot(spec):
    with pytest.raises(CommandError, match="--queue expects NAME or NAME:SLOTS"):
        parse_lane(spec)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--queue", "nosuch:1"], "Unknown queue nosuch; known queues: "),
        (["--queue", "ai:0"], "SLOTS ≥ 1"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
    ],
)
def test_runworker__refuses_bad_options_with_a_clear_message(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("runworker", *args)
