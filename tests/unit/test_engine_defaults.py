"""The engine's settings have defaults (``jobs.conf``), the same this project reads from a
silent environment: another project that sets none of them gets the same engine."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.test import override_settings

from jobs.conf import DEFAULTS, fill_in_defaults


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_defaults__are_what_this_project_reads_from_a_silent_environment(name):
    if name in os.environ:
        pytest.skip(f"{name} is set in this environment")
    assert getattr(settings, name) == DEFAULTS[name]


def test_fill_in_defaults__gives_a_missing_setting_its_default_and_keeps_a_given_one():
    with override_settings(JOBS_ACK_BATCH=7):
        del settings.JOBS_POLL_INTERVAL
        assert not hasattr(settings, "JOBS_POLL_INTERVAL")

        fill_in_defaults()

        assert settings.JOBS_POLL_INTERVAL == 1.0
        assert settings.JOBS_ACK_BATCH == 7
