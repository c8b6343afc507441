"""The Background jobs page as an operator sees it: Chromium at 1400 × 900 with the admin's
navigation open, a page of jobs in every state, long type names and long errors.

Every row's Retry or Cancel button is whole and in view, the list fits its box without
scrolling sideways, moments and durations stay on one line, errors take at most two lines,
and a job's page shows its error once with Retry in line with History. Screenshots go to
tests/artifacts/.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, Status
from tests.admin_jobs import PAGE, make_failed, make_job, make_operator
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import log_in, screenshot

browser = test_admin_browser.browser  # the page's Chromium fixture, shared with its other tests


pytestmark = [
    pytest.mark.browser,  # skipped without Chromium, failed in CI (tests/support/chromium.py)
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),  # the live server sees committed rows
]

LONG_ERROR = (
    "ModelCallError: the classifier endpoint did not answer within 30 s (POST "
    "https://bedrock-runtime.eu-central-1.amazonaws.com/model/anthropic/invoke); retried with backoff"
)

# Measured in the page in one go, so a live refresh cannot swap rows halfway through.
MEASURE_LIST = """() => {
  const box = (element) => element.getBoundingClientRect();
  const results = document.querySelector("#result_list").closest(".results");
  const area = box(results);
  const lines = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return new Set(Array.from(range.getClientRects(), (rect) => Math.round(rect.top))).size;
  };
  return {
    navigationOpen: document.querySelector("#main").classList.contains("shifted"),
    pageScrollWidth: document.documentElement.scrollWidth,
    viewportWidth: window.innerWidth,
    listScrollWidth: results.scrollWidth,
    listClientWidth: results.clientWidth,
    buttons: Array.from(document.querySelectorAll("#result_list button.job-action"), (button) => ({
      job: button.dataset.job,
      label: button.textContent,
      left: box(button).left,
      right: box(button).right,
      areaLeft: area.left,
      areaRight: Math.min(area.right, window.innerWidth),
      labelClipped: button.scrollWidth > button.clientWidth,
    })),
    wrappedMoments: Array.from(
      document.querySelectorAll("#result_list td:is(.field-when, .field-took, .field-attempts_cell)"),
    ).filter((cell) => lines(cell) > 1).map((cell) => cell.textContent.trim()),
    tallErrors: Array.from(document.querySelectorAll("#result_list .job-error")).filter(
      (error) => box(error).height > 2 * parseFloat(getComputedStyle(error).lineHeight) + 1,
    ).map((error) => error.textContent),
    emptyActionCells: Array.from(document.querySelectorAll("#result_list td.field-row_actions"))
      .filter((cell) => !cell.querySelector("button")).map((cell) => cell.textContent),
  };
}"""


def a_page_of_jobs() -> None:
    """33 jobs as a busy system shows them: every state, long type names, long errors."""
    now = timezone.now()
    finished = {"started_at": now - timedelta(seconds=30), "finished_at": now - timedelta(seconds=23)}
    for _ in range(8):
        make_job(Status.SUCCEEDED, **finished)
    # Jobs that name their records: the list links them (ids of records never created).
    named = {
        "workmanagement.sync": {"connection_id": 123456},
        "capsules.retrospective": {"repository_id": 654321},
    }
    for type_name in ("test.fail", "test.fail", "test.fail", "workmanagement.sync", "capsules.retrospective"):
        make_failed(type_name, tries=1, error=LONG_ERROR, payload=named.get(type_name, {}), **finished)
    for _ in range(6):
        make_job(
            Status.RUNNING,
            "test.progress",
            progress=40,
            progress_message="converting the second of five attachments to text",
            started_at=now - timedelta(seconds=1.6),
        )
    for _ in range(5):
        make_job(type_name="test.fail", attempts=1, error=LONG_ERROR, run_at=now + timedelta(minutes=2))
    for type_name in ("test.noop", "test.noop", "test.noop", "capsules.retrospective", "repository.analyse"):
        make_job(type_name=type_name, payload={"repository_id": 987654} if type_name != "test.noop" else {})
    for _ in range(4):
        make_job(Status.CANCELLED)
    assert Job.objects.count() == 33


def script_errors(page) -> list[str]:
    """Uncaught errors of the page's scripts from now on (the page loads only the admin's
    core scripts, and its own)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def clipped(buttons: list[dict]) -> list[str]:
    return [
        f"{b['label']} of job {b['job']} ({b['left']:.0f}–{b['right']:.0f} px in {b['areaLeft']:.0f}–{b['areaRight']:.0f})"
        for b in buttons
        if b["left"] < b["areaLeft"] - 0.5 or b["right"] > b["areaRight"] + 0.5 or b["labelClipped"]
    ]


def test_list__row_buttons_are_whole_and_in_view_at_1400px_with_the_navigation_open(
    browser, live_server
) -> None:
    make_operator()
    a_page_of_jobs()

    page = log_in(browser, live_server, "operator")
    errors = script_errors(page)
    page.reload()
    seen = page.evaluate(MEASURE_LIST)
    screenshot(page, "admin_jobs_list_1400.png")

    assert seen["navigationOpen"], "the admin's navigation should be open at 1400 px"
    assert len(seen["buttons"]) == 5 + 10  # Retry on the failed rows, Cancel on the queued ones
    assert clipped(seen["buttons"]) == []
    assert seen["pageScrollWidth"] <= seen["viewportWidth"], "the page scrolls sideways"
    assert seen["listScrollWidth"] <= seen["listClientWidth"], "the list hides columns in its scroll box"
    assert seen["wrappedMoments"] == []
    assert seen["tallErrors"] == []
    assert set(seen["emptyActionCells"]) == {""}  # no "-" placeholder where there is no button

    # In a narrower window the list scrolls in its box, and the buttons stay in view.
    page.set_viewport_size({"width": 1100, "height": 900})
    narrow = page.evaluate(MEASURE_LIST)
    screenshot(page, "admin_jobs_list_1100.png")
    assert narrow["listScrollWidth"] > narrow["listClientWidth"]  # the case this part is about
    assert clipped(narrow["buttons"]) == []
    assert narrow["pageScrollWidth"] <= narrow["viewportWidth"], "the page scrolls sideways"
    assert errors == []


def test_job_page__shows_the_error_once_and_retry_in_line_with_history(browser, live_server) -> None:
    make_operator()
    job = make_failed(tries=3, error=LONG_ERROR)

    page = log_in(browser, live_server, "operator", next_url=f"{PAGE}{job.pk}/change/")
    errors = script_errors(page)
    page.reload()
    retry = page.locator(".object-tools button.job-action--retry").bounding_box()
    history = page.locator(".object-tools a.historylink").bounding_box()
    screenshot(page, "admin_job_page_failed.png")

    # Its beginning: a shortened copy of the error would not contain the whole of it.
    assert page.inner_text("#content").count(LONG_ERROR[:40]) == 1
    assert retry is not None and history is not None
    assert abs(retry["y"] - history["y"]) <= 1 and abs(retry["height"] - history["height"]) <= 1
    assert errors == []


def test_filters__are_drop_downs_above_the_list_that_filter_it(browser, live_server) -> None:
    make_operator()
    ai = make_job(Status.SUCCEEDED, "test.ai")
    make_job(Status.SUCCEEDED)

    page = log_in(browser, live_server, "operator")
    queue = page.locator("details.job-filter", has_text="Queue:")
    assert not queue.get_attribute("open") and not page.is_visible("details.job-filter ul")
    filters, results = (
        page.locator("#changelist-filter").bounding_box(),
        page.locator("#result_list").bounding_box(),
    )
    # A bar above the list, not a column beside it.
    assert filters["y"] + filters["height"] <= results["y"] and abs(filters["x"] - results["x"]) <= 1
    queue.locator("summary").click()
    queue.get_by_role("link", name="ai", exact=True).click()

    page.wait_for_url("**queue=ai**")
    assert page.locator("#result_list tbody tr").count() == 1
    assert page.locator(f'#result_list a[href*="/job/{ai.pk}/change/"]').count() == 2  # id and type
    assert queue.locator("summary").inner_text().strip() == "Queue: ai"
    page.locator("details.job-filter", has_text="Type:").locator("summary").click()
    page.keyboard.press("Escape")
    assert not page.is_visible("details.job-filter ul")


# The other lists of the platform: a page of rows with long texts in every free-text column.
MEASURE_ANY_LIST = """() => {
  const results = document.querySelector("#result_list").closest(".results");
  return {
    navigationOpen: document.querySelector("#main").classList.contains("shifted"),
    pageScrollWidth: document.documentElement.scrollWidth,
    viewportWidth: window.innerWidth,
    listScrollWidth: results.scrollWidth,
    listClientWidth: results.clientWidth,
    rows: document.querySelectorAll("#result_list tbody tr").length,
  };
}"""


def many_failed_tries_and_workers() -> None:
    from jobs.models import Worker
    from tests.factories import JobAttemptFactory

    for _ in range(12):
        job = make_failed("capsules.retrospective", tries=1, error=LONG_ERROR)
        JobAttemptFactory(
            job=job,
            attempt=2,
            error_class="workspaces.errors.ProviderAnswerInvalid.SomethingLongerStill",
            error=LONG_ERROR * 3,
            worker="ip-10-0-12-34.eu-central-1.compute.internal:4242:17",
        )
    for number in range(6):
        Worker.objects.create(
            name=f"ip-10-0-12-{number}.eu-central-1.compute.internal:{4000 + number}",
            host=f"ip-10-0-12-{number}.eu-central-1.compute.internal",
            pid=4000 + number,
            queues=["ai:1,default:2,ingestion:1,mail:4"],
        )


def many_emails() -> None:
    from pipeline.models import EmailMessage

    for number in range(12):
        EmailMessage.objects.create(
            blob_name=f"emails/{number:064d}.eml",
            size=1000,
            sha256=f"{number:064d}",
            sender="A sender with a very long display name indeed <someone.with.a.long.address@subdomain.example.com>",
            subject="Re: Fwd: " * 8 + "the quarterly report, the meeting agenda and the budget review",
            status="failed",
            needs_review=number % 2 == 0,
        )
        make_failed(
            "email.process", tries=3, payload={"email_id": EmailMessage.objects.latest("pk").pk}, keyed=True
        )


def an_email_with_long_attachments() -> None:
    """The first email (the list's filter) gets attachments and a run with long texts."""
    from pipeline.models import Attachment, EmailMessage, PipelineRun

    many_emails()
    email = EmailMessage.objects.order_by("pk").first()
    PipelineRun.objects.create(email=email, last_error=LONG_ERROR * 4)
    for position in range(8):
        Attachment.objects.create(
            email=email,
            position=position,
            filename=f"{'quarterly-report-and-budget-review-' * 4}{position}.pdf",
            content_type="application/pdf",
            size=123456,
            note="not converted: " + "the PDF's content stream is over the page token limit " * 3,
            text="Quarterly revenue grew strongly " * 40,
        )


def first_email(rows) -> str:
    from pipeline.models import EmailMessage

    return str(EmailMessage.objects.order_by("pk").values_list("pk", flat=True).first())


@pytest.mark.parametrize(
    ("url", "rows"),
    [
        ("/admin/platform/jobattempt/", many_failed_tries_and_workers),
        ("/admin/platform/worker/", many_failed_tries_and_workers),
        ("/admin/pipeline/emailmessage/", many_emails),
        ("/admin/pipeline/attachment/?email__id__exact=FIRST", an_email_with_long_attachments),
    ],
    ids=["attempts", "workers", "emails", "attachments"],
)
def test_other_lists__fit_at_1400px_with_the_navigation_open(browser, live_server, url, rows) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("admin", "admin@example.com", "correct-horse-battery")
    rows()
    url = url.replace("FIRST", first_email(rows))

    page = log_in(browser, live_server, "admin", next_url=url, waits_for=url.split("?")[0])
    seen = page.evaluate(MEASURE_ANY_LIST)
    screenshot(
        page, f"admin_{url.split('?')[0].strip('/').removeprefix('admin/').replace('/', '_')}_1400.png"
    )

    assert seen["navigationOpen"] and seen["rows"] >= 6
    assert seen["pageScrollWidth"] <= seen["viewportWidth"], "the page scrolls sideways"
    assert seen["listScrollWidth"] <= seen["listClientWidth"], "the list hides columns in its scroll box"


def test_email_page__its_runs_and_attachments_fit_at_1400px(browser, live_server) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("admin", "admin@example.com", "correct-horse-battery")
    an_email_with_long_attachments()
    url = f"/admin/pipeline/emailmessage/{first_email(None)}/change/"

    page = log_in(browser, live_server, "admin", next_url=url, waits_for=url)
    seen = page.evaluate(
        "() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,"
        " wide: Array.from(document.querySelectorAll('.inline-group')).filter("
        "(group) => group.scrollWidth > group.clientWidth + 1).map((group) => group.id)})"
    )
    screenshot(page, "admin_email_page_1400.png")

    assert seen["page"] <= seen["viewport"], "the page scrolls sideways"
    assert seen["wide"] == [], "an inline table is wider than its box"
