"""Fixtures for the pipeline tests: a private blob folder (shared with the workers the
test starts), model calls on, and a model endpoint that never answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.storage import FileSystemStorage

from tests.support.servers import SilentServer


@pytest.fixture(autouse=True)
def blob_root(tmp_path: Path, settings) -> Path:
    """Blob storage in this test's own folder, in-process and for started workers."""
    var_dir = tmp_path / "var"
    root = var_dir / "blobs"
    configured = settings.STORAGES["blobs"]
    local = configured["OPTIONS"] if configured["BACKEND"].endswith("FileSystemStorage") else {}
    settings.STORAGES = {
        **settings.STORAGES,
        "blobs": {
            "BACKEND": f"{FileSystemStorage.__module__}.{FileSystemStorage.__qualname__}",
            # The project's local options (overwriting allowed, private modes), another folder.
            "OPTIONS": {"allow_overwrite": True, **local, "location": root},
        },
    }
    settings.MODEL_PROVIDER = "local"
    settings.MODEL_CALLS_DEFAULT = True
    settings.SEARCH_INDEX = True
    settings.VECTOR_INDEX = True
    settings.EMBEDDING_PROVIDER = "local"
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = var_dir / "qdrant"
    return root


@pytest.fixture
def worker_env(worker_env: dict[str, str], blob_root: Path) -> dict[str, str]:
    return {
        **worker_env,
        "VAR_DIR": str(blob_root.parent),
        "BLOB_STORAGE": "local",
        "MODEL_PROVIDER": "local",
        "MODEL_CALLS_DEFAULT": "true",
        "QDRANT_PATH": str(blob_root.parent / "qdrant"),
    }


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    """A model endpoint that accepts connections and never answers."""
    server = SilentServer()
    yield server
    server.close()
