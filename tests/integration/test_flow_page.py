"""The flow-control page and the queues' buttons on the Background jobs page: what they
show, who may change what (``platform.change_queue``), the admin log of every change, and
bad input refused with the engine's words."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client

import jobs
from jobs import store
from jobs.models import Queue
from tests.admin_jobs import PAGE, make_user, make_viewer
from tests.integration.test_admin_actions import texts

pytestmark = pytest.mark.django_db

FLOW = "/admin/platform/queue/"


@pytest.fixture
def queue_operator(client: Client) -> Client:
    client.force_login(make_user("ops", "view_jobs", "change_queue"))
    return client


def _logged(queue: str) -> list[str]:
    row = Queue.objects.get(queue=queue)
    return [
        entry.get_change_message() for entry in LogEntry.objects.filter(object_id=str(row.pk)).order_by("id")
    ]


def test_page__shows_each_queues_and_each_types_limits_usage_and_source(client: Client, settings) -> None:
    settings.JOBS_QUEUES = {"ai": {"rate": "100/m"}}
    client.force_login(make_viewer())
    store.enqueue_many("test.flow_key", [{"account": 1}, {"account": 1}, {"account": 2}])
    store.claim_flowed("w", ["default"], 10, _rules(), keyed_only=True)  # one per account runs

    page = client.get(FLOW).text

    assert '<tr class="flow-queue" data-queue="ai">' in page
    assert "100 a minute starts" in page and "from JOBS_QUEUES" in page
    assert 'data-type="test.flow_key"' in page and "at most 1 running per account:{account}" in page
    assert "2 keys running, 2 at the limit" in page  # account 1's second job waits
    assert "<form" not in page.split('id="content-main"')[1]  # viewing only: no buttons, no forms


@pytest.mark.django_db(transaction=True)  # a lease is handed out only outside a caller's transaction
def test_page__shows_the_jobs_a_types_leases_hold(client: Client) -> None:
    client.force_login(make_viewer())
    store.enqueue("test.noop_limited", {})
    store.claim_flowed("w", ["default"], 10, _rules(), keyed_only=True, lease_most=8)

    row = client.get(FLOW).text.split('data-type="test.noop_limited"')[1].split("</tr>")[0]

    assert "1 of 100000" in row and "+ 8 held by workers' leases" in row
    assert "9 of 100000" in row  # the lease's starts are in the rate window


def _rules():
    from jobs import registry
    from jobs.flow import admission

    return admission.Rules(queues={}, type_limits=registry.limits_of)


def test_pause_and_resume__need_the_change_permission_and_are_logged(client: Client, queue_operator) -> None:
    viewer = Client()
    viewer.force_login(make_viewer())
    assert viewer.post(f"{FLOW}ai/pause/").status_code == 403
    assert not Queue.objects.exists()

    response = queue_operator.post(f"{FLOW}ai/pause/", {"next": PAGE}, follow=True)
    assert response.redirect_chain[-1][0] == PAGE
    assert Queue.objects.get(queue="ai").paused
    assert "Queue ai: paused." in texts(response)
    queue_operator.post(f"{FLOW}ai/resume/")
    assert not Queue.objects.get(queue="ai").paused
    assert _logged("ai") == ["Paused", "Resumed"]
    assert queue_operator.get(f"{FLOW}ai/pause/").status_code == 405
    assert queue_operator.post(f"{FLOW}nosuchqueue/pause/").status_code == 404


def test_limits__set_from_the_page_in_place_of_the_settings_and_reset(queue_operator, settings) -> None:
    settings.JOBS_QUEUES = {"ai": {"concurrency": 8}}
    queue_operator.post(f"{FLOW}ai/limits/", {"concurrency": "4", "rate": "100/m"})
    row = Queue.objects.get(queue="ai")
    assert (row.limits_set, row.concurrency, row.rate) == (True, 4, "100/m")
    page = queue_operator.get(FLOW).text
    assert "at most 4 running, 100 a minute starts" in page
    assert "from an operator, in place of the settings' at most 8 running" in page

    queue_operator.post(f"{FLOW}ai/limits/", {"reset": "1"})
    assert not Queue.objects.get(queue="ai").limits_set
    assert _logged("ai") == ["Limits: at most 4 running, 100 a minute starts", "Limits reset to the settings"]


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"concurrency": "four"}, "concurrency must be a whole number"),
        ({"concurrency": "0"}, "whole number from 1"),
        ({"rate": "100 per minute"}, "must read like '60/m'"),
        ({"rate": "9999999/s"}, "1 to 100,000 starts"),
    ],
)
def test_limits__bad_input_changes_nothing_and_says_why(queue_operator, form, said) -> None:
    response = queue_operator.post(f"{FLOW}ai/limits/", form, follow=True)
    assert any(said in text for text in texts(response))
    assert not Queue.objects.filter(limits_set=True).exists()


def test_background_jobs_page__a_paused_queue_is_shown_paused_not_unserved(client: Client) -> None:
    client.force_login(make_user("ops", "view_jobs", "change_queue"))
    store.enqueue("test.ai", {})  # the ai queue: due, and no worker serves it
    jobs.pause_queue("ai")

    page = client.get(PAGE).text

    assert "The queue &#x27;ai&#x27; is paused: 1 due job waits until it is resumed." in page
    assert "No live worker serves the queue &#x27;ai&#x27;" not in page
    assert 'class="button job-queue-action job-queue-action--resume"' in page
    assert 'id="queue-action"' in page
