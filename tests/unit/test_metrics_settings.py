"""The metrics endpoint's address allowlist is read and checked at start-up."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import env


def test_networks__reads_addresses_and_networks(monkeypatch):
    monkeypatch.setenv("JOBS_TEST_NETWORKS", "10.0.0.0/8, 127.0.0.1,::1")
    assert env.networks("JOBS_TEST_NETWORKS") == [
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("::1/128"),
    ]


def test_networks__unset_is_empty(monkeypatch):
    monkeypatch.delenv("JOBS_TEST_NETWORKS", raising=False)
    assert env.networks("JOBS_TEST_NETWORKS") == []


def test_networks__a_malformed_entry_stops_start_up_naming_the_setting(monkeypatch):
    monkeypatch.setenv("JOBS_TEST_NETWORKS", "10.0.0.0/8,prometheus.internal")
    with pytest.raises(
        ImproperlyConfigured, match="Setting JOBS_TEST_NETWORKS must list addresses or networks"
    ):
        env.networks("JOBS_TEST_NETWORKS")
