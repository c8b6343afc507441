"""The model settings stop start-up naming the setting, and never print a secret."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # every test starts a Python process

SETUP = "import django; django.setup(); from django.conf import settings; print(settings.MODEL_PROVIDER)"
MODEL_SETTINGS = {
    "MODEL_PROVIDER",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "MODEL_MAX_OUTPUT_TOKENS",
}


def _setup(**env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key not in MODEL_SETTINGS}
    return subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message", "secret"),
    [
        ({"MODEL_PROVIDER": "openai"}, "OPENAI_MODEL is required when MODEL_PROVIDER=openai", None),
        ({"OPENAI_API_KEY": "sk-secret with-a-space"}, "Setting OPENAI_API_KEY holds spaces", "sk-secret"),
        ({"OPENAI_API_KEY": "sk-secret\n"}, "Setting OPENAI_API_KEY holds spaces", "sk-secret"),
        (
            {"OPENAI_BASE_URL": "ftp://user:hunter2@models.internal/v1"},
            "Setting OPENAI_BASE_URL must be an absolute http or https URL",
            "hunter2",
        ),
        ({"OPENAI_BASE_URL": "http://user:hunter2@host:port/v1"}, "Setting OPENAI_BASE_URL", "hunter2"),
        ({"MODEL_MAX_OUTPUT_TOKENS": "many"}, "MODEL_MAX_OUTPUT_TOKENS must be a whole number", None),
        ({"MODEL_MAX_OUTPUT_TOKENS": "4"}, "MODEL_MAX_OUTPUT_TOKENS must be at least 16", None),
    ],
)
def test_settings__a_bad_value_names_the_setting_never_its_secret(env, message, secret):
    result = _setup(**env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and message in result.stderr
    if secret:
        assert secret not in result.stderr + result.stdout


def test_settings__openai_with_its_settings_starts():
    result = _setup(
        MODEL_PROVIDER="openai",
        OPENAI_BASE_URL="http://127.0.0.1:8000/v1",
        OPENAI_MODEL="llama-3.1-8b-instruct",
        OPENAI_API_KEY="$not-expanded",
    )
    assert (result.returncode, result.stdout.strip()) == (0, "openai"), result.stderr
