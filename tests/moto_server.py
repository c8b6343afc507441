"""A real moto server over HTTP for S3 and CloudWatch tests (no in-process patching)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.waiting import wait_for


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """Start ``moto_server`` on a free port; yields its endpoint URL.

    Also sets dummy AWS credentials and a region in the environment, which boto3 needs.
    """
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    saved = {
        key: os.environ.get(key)
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "eu-central-1",
        }
    )
    try:
        wait_for(lambda: _answers(f"{endpoint}/moto-api/"), timeout=30, message="moto server")
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a loaded machine; what it held is of no use now
            process.kill()
            process.wait(timeout=10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def moto_reset(moto_server: str) -> str:
    """Forget everything the moto server holds, so each test starts empty."""
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=5)
    return moto_server
