"""The pipeline's settings fail loudly, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # every test starts a Python process

SETUP = "import django; django.setup(); from django.conf import settings; print(settings.STORAGES['blobs']['BACKEND'])"


def _setup(**env: str) -> subprocess.CompletedProcess:
    clean = {
        key: value
        for key, value in os.environ.items()
        if key not in {"BLOB_STORAGE", "MODEL_PROVIDER"} and not key.startswith(("EMBEDDING_", "QDRANT_URL"))
    }
    return subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BLOB_STORAGE": "ftp"}, "BLOB_STORAGE must be one of local, s3"),
        ({"BLOB_STORAGE": "s3"}, "AWS_STORAGE_BUCKET_NAME is required"),
        ({"MODEL_PROVIDER": "gpt"}, "MODEL_PROVIDER must be one of local, bedrock, openai"),
        ({"MODEL_TIMEOUT": "soon"}, "MODEL_TIMEOUT must be a number"),
        ({"SEARCH_INDEX": "maybe"}, "SEARCH_INDEX must be true or false"),
        ({"PIPELINE_MAX_EMAIL_BYTES": "50MB"}, "PIPELINE_MAX_EMAIL_BYTES must be a whole number"),
        ({"PIPELINE_MAX_MIME_DEPTH": "0"}, "PIPELINE_MAX_MIME_DEPTH must be at least 1"),
        ({"PIPELINE_MAX_MIME_PARTS": "40000"}, "PIPELINE_MAX_MIME_PARTS must be at most 32767"),
        ({"PIPELINE_MAX_TEXT": "-1"}, "PIPELINE_MAX_TEXT must be at least 1"),
        ({"PIPELINE_PDF_MAX_PAGES": "all"}, "PIPELINE_PDF_MAX_PAGES must be a whole number"),
        ({"PIPELINE_PDF_PAGE_TOKENS": "0"}, "PIPELINE_PDF_PAGE_TOKENS must be at least 1"),
        ({"PIPELINE_PROCESS_TIMEOUT": "0.5"}, "PIPELINE_PROCESS_TIMEOUT must be at least 1.0"),
        ({"PIPELINE_SWEEP_TIMEOUT": "never"}, "PIPELINE_SWEEP_TIMEOUT must be a number"),
        ({"PIPELINE_ADMIN_ROWS": "0"}, "PIPELINE_ADMIN_ROWS must be at least 1"),
        ({"EMBEDDING_PROVIDER": "hash"}, "EMBEDDING_PROVIDER must be one of local, bedrock, openai"),
        (
            {"EMBEDDING_DIMENSIONS": "100"},
            "EMBEDDING_DIMENSIONS must be 64, 128 or 256 with EMBEDDING_PROVIDER=local",
        ),
        ({"EMBEDDING_MODEL": "bge-m3"}, "EMBEDDING_MODEL must be wordllama-l2-supercat (or unset)"),
        ({"EMBEDDING_CHUNK_OVERLAP": "900"}, "EMBEDDING_CHUNK_OVERLAP must be less than half"),
        ({"QDRANT_URL": "qdrant:6333"}, "QDRANT_URL must be an absolute http or https URL with a host"),
        ({"QDRANT_API_KEY": "key with spaces"}, "QDRANT_API_KEY holds spaces"),
    ],
)
def test_settings__a_bad_value_names_the_variable(env, message):
    result = _setup(**env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and message in result.stderr
    assert "key with spaces" not in result.stderr


def test_settings__blob_storage_is_chosen_by_settings():
    assert _setup().stdout.strip() == "django.core.files.storage.FileSystemStorage"
    assert (
        _setup(BLOB_STORAGE="s3", AWS_STORAGE_BUCKET_NAME="b").stdout.strip()
        == "storages.backends.s3.S3Storage"
    )
