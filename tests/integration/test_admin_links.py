"""Links other apps register on the Background jobs page (the engine names none itself)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from jobs.admin import register_link
from jobs.admin.links import registered_links, unregister_link
from tests.admin_jobs import PAGE, make_viewer

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_client(client: Client) -> Client:
    client.force_login(make_viewer())
    return client


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Keys registered by the test, taken off again afterwards."""
    keys: list[str] = []
    yield keys
    for key in keys:
        unregister_link(key)


def test_registered_link__shows_the_page_with_its_filters(viewer_client: Client, registered) -> None:
    register_link("ai-running", "Running AI jobs", status="running", queue="ai")
    registered.append("ai-running")

    html = viewer_client.get(PAGE).text

    assert (
        '<a href="/admin/platform/job/?status=running&amp;queue=ai" class="viewlink" id="job-ai-running">'
        in html
    )
    assert "Running AI jobs" in html


def test_registered_link__may_lead_to_another_admin_page(viewer_client: Client, registered) -> None:
    register_link("attempts", "Every failed try", url_name="admin:platform_jobattempt_changelist")
    registered.append("attempts")

    html = viewer_client.get(PAGE).text

    assert 'href="/admin/platform/jobattempt/" class="viewlink" id="job-attempts"' in html


def test_the_pipeline__registers_its_failed_list_and_the_engine_no_other() -> None:
    assert [(link.key, link.url()) for link in registered_links()] == [
        ("mail-failed", "/admin/platform/job/?status=failed&queue=mail")
    ]


def test_register_link__refuses_unknown_filters_a_missing_target_and_a_taken_key(registered) -> None:
    with pytest.raises(ImproperlyConfigured, match="no filter colour"):
        register_link("odd", "Odd", colour="red")
    with pytest.raises(ImproperlyConfigured, match="either filters of the page or a url_name"):
        register_link("nowhere", "Nowhere")

    register_link("ai-failed", "Failed AI jobs", status="failed", queue="ai")
    registered.append("ai-failed")
    register_link("ai-failed", "Failed AI jobs", status="failed", queue="ai")  # the same again: fine
    with pytest.raises(ImproperlyConfigured, match="already registered"):
        register_link("ai-failed", "Something else", status="queued")
