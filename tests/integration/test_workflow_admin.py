"""The Workflows page: the list, a workflow's graph of steps with their statuses, attempts and
jobs, a step's job page linking its workflow, and Retry and Cancel with their permission,
their messages and the admin log."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.utils.html import strip_tags

import jobs
from jobs import testing
from jobs.admin import workflow_graph
from jobs.models import Job, Status, Workflow
from tests.admin_jobs import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)  # steps run inline: their claims compare with now()

LIST = "/admin/platform/workflow/"


def s(value: str, **payload: object) -> jobs.Step:
    return jobs.step("test.step", {"value": value, **payload}, name=value)


def page(workflow: Workflow) -> str:
    return f"{LIST}{workflow.pk}/change/"


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(make_user("viewer", "view_jobs"))
    return client


@pytest.fixture
def operator(client: Client) -> Client:
    client.force_login(make_user("operator", "view_jobs", "change_workflow"))
    return client


@pytest.fixture
def failed(tmp_path: Path) -> Workflow:
    """a, then b (fails until the file exists) beside c, then d."""
    workflow = jobs.start(
        jobs.chain(s("a"), jobs.group([s("b", fail_unless=str(tmp_path / "fixed")), s("c")], then=s("d"))),
        name="demo.failing",
        dedupe_key="demo:1",
    )
    testing.drain()
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.FAILED
    return workflow


def test_list__shows_each_workflow_with_its_status_and_steps(viewer: Client, failed: Workflow) -> None:
    jobs.start(s("alone"), name="demo.other")
    response = viewer.get(LIST)
    assert response.status_code == 200
    text = response.text
    assert "demo.failing" in text and "demo.other" in text
    assert "2 of 4 succeeded" in text and "0 of 1 succeeded" in text
    assert viewer.get(LIST, {"status": "failed"}).text.count("demo.other") == 0
    assert "demo.failing" in viewer.get(LIST, {"q": "demo:1"}).text


def test_page__draws_every_step_with_its_status_attempts_and_job(viewer: Client, failed: Workflow) -> None:
    response = viewer.get(page(failed))
    assert response.status_code == 200
    text = response.text
    assert text.count('class="workflow-step ') == 4
    for name, status in [("a", "succeeded"), ("b", "failed"), ("c", "succeeded"), ("d", "cancelled")]:
        assert f"workflow-status--{status}" in text and f"{name} (test.step)" in text
    assert "try 1/10" in text and "Upstream step #2 b failed." in text  # d's message, in its title
    b_job = Job.objects.get(step__workflow_id=failed.pk, step__name="b")
    assert f'href="/admin/platform/job/{b_job.pk}/change/"' in text
    assert text.count('class="workflow-edge"') == 4  # a→b, a→c, b→d, c→d
    assert 'http-equiv="refresh"' not in text  # only a running workflow reloads
    assert "job-action--retry" not in text  # a viewer sees no buttons


def test_job_page__links_its_workflow(viewer: Client, failed: Workflow) -> None:
    job = Job.objects.get(step__workflow_id=failed.pk, step__name="b")
    text = viewer.get(f"/admin/platform/job/{job.pk}/change/").text
    assert f'href="{page(failed)}"' in text
    assert "step #2 b of" in text


def test_retry__resumes_the_workflow_and_is_logged(
    operator: Client, failed: Workflow, tmp_path: Path
) -> None:
    (tmp_path / "fixed").touch()
    assert "job-action--retry" in operator.get(page(failed)).text

    response = operator.post(f"{LIST}{failed.pk}/retry/", follow=True)

    failed.refresh_from_db()
    assert failed.status == Workflow.Status.RUNNING
    assert f"Workflow #{failed.pk} resumes" in strip_tags(response.text)
    [entry] = LogEntry.objects.filter(object_id=str(failed.pk), content_type__model="workflow")
    assert (entry.get_change_message(), entry.user.username) == ("Retried", "operator")
    assert "Retried by <strong>operator</strong>" in response.text
    testing.drain()
    failed.refresh_from_db()
    assert failed.status == Workflow.Status.SUCCEEDED


def test_cancel__cancels_a_running_workflow_and_refuses_a_finished_one(operator: Client) -> None:
    workflow = jobs.start(jobs.chain(s("a"), s("b")), name="demo.running")
    assert 'http-equiv="refresh"' in operator.get(page(workflow)).text

    operator.post(f"{LIST}{workflow.pk}/cancel/")
    workflow.refresh_from_db()
    assert workflow.status == Workflow.Status.CANCELLED
    assert Job.objects.get(step__workflow_id=workflow.pk).status == Status.CANCELLED

    again = operator.post(f"{LIST}{workflow.pk}/cancel/", follow=True)
    assert "Only a running or failed workflow can be cancelled" in again.text


@pytest.mark.parametrize("verb", ["retry", "cancel"])
def test_buttons__need_the_change_permission(viewer: Client, failed: Workflow, verb: str) -> None:
    assert viewer.post(f"{LIST}{failed.pk}/{verb}/").status_code == 403
    assert viewer.get(f"{LIST}{failed.pk}/{verb}/").status_code in (403, 405)
    failed.refresh_from_db()
    assert failed.status == Workflow.Status.FAILED


def test_section__needs_view_jobs(client: Client, failed: Workflow) -> None:
    make_user("staff")
    client.login(username="staff", password=PASSWORD)
    assert client.get(LIST).status_code == 403
    assert client.get(page(failed)).status_code == 403


def test_graph__shows_a_bounded_part_of_a_wide_and_long_workflow() -> None:
    wide = jobs.group([s(f"m{n}") for n in range(200)], then=s("end"))
    long = jobs.chain(*(s(f"c{n}") for n in range(60)))
    workflow = jobs.start(jobs.chain(long, wide))

    graph = workflow_graph.build(workflow)

    # The chain's first and last columns (its middle is one gap), the group's first steps
    # (the rest in one box) and the callback.
    first, last, per_column = (
        workflow_graph.FIRST_COLUMNS,
        workflow_graph.LAST_COLUMNS,
        workflow_graph.PER_COLUMN,
    )
    assert graph.steps_shown == first + (last - 2) + per_column + 1
    kinds = [box.kind for box in graph.boxes]
    assert kinds.count("more") == 1 and kinds.count("gap") == 1
    more = next(box for box in graph.boxes if box.kind == "more")
    assert more.line1 == f"+ {200 - per_column} more steps"
    end = next(box for box in graph.boxes if box.line1.endswith(" end"))
    assert (more, end) in graph.edges  # the hidden members lead to the callback too
