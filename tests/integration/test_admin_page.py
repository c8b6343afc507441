"""What the Background jobs page shows: tiles and their counts, the columns, filters,
search, the refresh fragment and a job's own page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs.admin import counting, job_page
from jobs.models import Status
from tests.admin_jobs import PAGE, make_failed, make_job, make_operator, make_viewer

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_client(client: Client) -> Client:
    client.force_login(make_viewer())
    return client


def tile(html: str, status: str) -> str:
    match = re.search(rf'<a class="job-tile job-tile--{status}.*?</a>', html, re.S)
    assert match, f"no {status} tile"
    return match.group(0)


def tile_count(html: str, status: str) -> str:
    return re.search(r'class="job-tile-count"[^>]*>([^<]*)<', tile(html, status)).group(1)


def row_ids(html: str) -> list[int]:
    return [
        int(pk) for pk in re.findall(r'<th class="field-id"><a href="/admin/platform/job/(\d+)/change/', html)
    ]


def row(html: str, pk: int) -> str:
    match = re.search(rf"<tr>(?:(?!</tr>).)*?/admin/platform/job/{pk}/change/.*?</tr>", html, re.S)
    assert match, f"no row for job {pk}"
    return match.group(0)


def test_tiles__count_each_status_exactly_and_filter_when_clicked(viewer_client: Client) -> None:
    queued = [make_job(), make_job()]
    make_job(Status.RUNNING)
    succeeded = [make_job(Status.SUCCEEDED) for _ in range(3)]
    make_failed()
    make_job(Status.CANCELLED)

    html = viewer_client.get(PAGE).text

    assert [tile_count(html, status) for status in ("queued", "running", "succeeded", "failed")] == [
        "2",
        "1",
        "3",
        "1",
    ]
    assert "exact count" in tile(html, "succeeded")
    href = re.search(r'href="([^"]+)"', tile(html, "queued")).group(1)
    assert href == f"{PAGE}?status=queued"
    assert sorted(row_ids(viewer_client.get(href).text)) == sorted(job.pk for job in queued)
    assert sorted(row_ids(viewer_client.get(f"{PAGE}?status=succeeded").text)) == sorted(
        j.pk for j in succeeded
    )


def test_tiles__above_the_exact_limit_say_they_estimate(viewer_client: Client, monkeypatch) -> None:
    monkeypatch.setattr(counting, "EXACT_UP_TO", 2)
    for _ in range(4):
        make_job(Status.SUCCEEDED)

    html = viewer_client.get(PAGE).text

    succeeded = tile(html, "succeeded")
    assert "estimate" in succeeded and 'data-exact="0"' in succeeded
    assert "not a count" in succeeded  # the tooltip says what the figure is
    assert tile_count(html, "queued") == "0" and "exact count" in tile(html, "queued")
    assert "more than 2" in html  # the paginator stops counting too


def test_tile_figures__exact_estimated_and_lagging_statistics() -> None:
    assert counting.StatusCount("failed", 1234, exact=True).figure == "1,234"
    assert counting.StatusCount("succeeded", 986_123, exact=False).figure == "≈ 986,000"
    # Statistics not yet caught up with a burst: all we know is "more than the limit".
    assert counting.StatusCount("queued", 42, exact=False).figure == f"{counting.EXACT_UP_TO:,}+"


def test_columns__running_job_shows_percent_and_live_message(viewer_client: Client) -> None:
    job = make_job(Status.RUNNING, "test.progress", progress=40, progress_message="step 2 of 5")

    cells = row(viewer_client.get(PAGE).text, job.pk)

    assert "test.progress" in cells and ">default<" in cells
    assert "job-status--running" in cells
    assert "40 %" in cells and "step 2 of 5" in cells
    assert '<td class="field-attempts_cell">1/1</td>' in cells  # its first try of test.progress's one
    assert "so far" in cells and "started" in cells


def test_columns__failed_job_shows_its_error_attempts_and_duration(viewer_client: Client) -> None:
    started = timezone.now() - timedelta(minutes=5)
    job = make_failed(tries=3, started_at=started, finished_at=started + timedelta(seconds=42))

    cells = row(viewer_client.get(PAGE).text, job.pk)

    assert "job-status--failed" in cells
    assert "RuntimeError: boom" in cells
    assert "3/3" in cells
    assert "42 s" in cells
    assert "finished 4 min" in cells  # 5 min ago + 42 s


def test_columns__queued_job_waiting_for_a_retry_shows_when_it_runs_again(viewer_client: Client) -> None:
    job = make_job(
        type_name="test.fail",
        attempts=1,
        error="RuntimeError: boom",
        run_at=timezone.now() + timedelta(minutes=2, seconds=5),
    )

    cells = row(viewer_client.get(PAGE).text, job.pk)

    assert "retry 1/3" in cells
    assert "runs again in 2 min" in cells
    assert "RuntimeError: boom" in cells


def test_columns__rows_without_a_button_leave_the_actions_cell_empty(client: Client) -> None:
    client.force_login(make_operator())
    running, failed = make_job(Status.RUNNING), make_failed()

    html = client.get(PAGE).text

    assert '<td class="field-row_actions"></td>' in row(html, running.pk)  # no "-" placeholder
    assert "job-action--retry" in row(html, failed.pk)


def test_list__is_newest_first_and_filters_by_status_queue_and_type(viewer_client: Client) -> None:
    first = make_job(Status.SUCCEEDED)
    ai = make_job(Status.SUCCEEDED, "test.ai")
    failed_ai = make_failed("test.ai", tries=2)

    assert row_ids(viewer_client.get(PAGE).text) == [failed_ai.pk, ai.pk, first.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?queue=ai").text) == [failed_ai.pk, ai.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?type=test.noop").text) == [first.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?status=failed&queue=ai").text) == [failed_ai.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?status=failed&queue=default").text) == []


def test_search__by_id_and_by_dedupe_key(viewer_client: Client) -> None:
    keyed = make_job(Status.SUCCEEDED, dedupe_key="email:7")
    other = make_job()

    assert row_ids(viewer_client.get(f"{PAGE}?q={other.pk}").text) == [other.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?q=%23{other.pk}").text) == [other.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?q=email:7").text) == [keyed.pk]
    assert row_ids(viewer_client.get(f"{PAGE}?q=email").text) == []  # exact keys only


def test_page__links_to_the_mail_queues_failed_list(viewer_client: Client) -> None:
    html = viewer_client.get(PAGE).text

    assert 'href="/admin/platform/job/?status=failed&amp;queue=mail"' in html


def test_refresh__returns_only_the_live_parts_with_the_same_filters(viewer_client: Client) -> None:
    queued = make_job()
    make_job(Status.SUCCEEDED)

    fragment = viewer_client.get(f"{PAGE}?status=queued", headers={job_page.REFRESH_HEADER: "1"})

    assert fragment.status_code == 200
    assert "<html" not in fragment.text and 'id="changelist-filter"' not in fragment.text
    assert 'id="job-tiles"' in fragment.text and 'id="job-results"' in fragment.text
    assert 'data-active="1"' in fragment.text
    assert row_ids(fragment.text) == [queued.pk]
    assert "X-Jobs-Refresh" in fragment["Vary"]


def test_refresh__the_page_refreshes_every_three_seconds_while_live(viewer_client: Client) -> None:
    make_job()

    html = viewer_client.get(PAGE).text

    assert re.search(r'<div id="job-tiles"[^>]*data-active="1"[^>]*data-refresh-ms="3000"', html)
    assert "refreshing every 3 s" in html
    assert "setTimeout(refresh, Number(tiles().dataset.refreshMs))" in html  # the script reads it


def test_refresh__is_off_when_nothing_is_queued_or_running(viewer_client: Client) -> None:
    make_job(Status.SUCCEEDED)
    make_failed()

    html = viewer_client.get(PAGE).text

    assert 'data-active="0"' in html
    assert "Idle: nothing queued or running" in html


def test_job_page__shows_payload_attempts_tracebacks_worker_and_timestamps(viewer_client: Client) -> None:
    job = make_failed(tries=2, payload={"repository_id": 7})

    html = viewer_client.get(f"{PAGE}{job.pk}/change/").text

    assert "&quot;repository_id&quot;: 7" in html
    assert "Failed attempts (2)" in html
    assert "boom on try 1" in html and "boom on try 2" in html
    assert "RuntimeError: boom 2" in html  # the traceback
    assert "host-a:101:0" in html  # the worker
    for label in ("Created:", "Run at (due):", "Started:", "Finished:", "Last heartbeat:"):
        assert label in html


def test_page__its_inline_script_and_style_carry_the_nonce_of_the_content_security_policy(
    viewer_client: Client,
) -> None:
    make_job()

    response = viewer_client.get(PAGE)

    policy = response["Content-Security-Policy"]
    nonce = re.search(r"script-src 'self' 'nonce-([^']+)'", policy).group(1)
    assert f"style-src 'self' 'nonce-{nonce}'" in policy
    assert "unsafe-inline" not in policy
    html = response.text
    inline = re.findall(r"<(script|style)(?![^>]*\bsrc=)([^>]*)>", html)
    assert inline, "the page's own script and style"
    assert all(f'nonce="{nonce}"' in attributes for _, attributes in inline)
