"""The GitHub code host and the HTTP convention, against a local server answering like
GitHub's REST API (``tests/support/github.py``). Nothing reaches the internet."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

import jobs
from tests.support.github import TOKEN, FakeGitHub
from tests.support.job_states import wait_status
from tests.support.servers import DrippingServer, SilentServer, gzip_bomb
from workspaces.errors import ProviderAnswerInvalid, ProviderRefused, ProviderUnavailable
from workspaces.models import PullRequest, ReviewCapsule
from workspaces.providers import code_host, use_code_host
from workspaces.providers.github import GitHubCodeHost, repository_full_name
from workspaces.providers.http import HttpClient, rate_limited_until
from workspaces.providers.stored import StoredCodeHost
from workspaces.services import capsules
from workspaces.services.pull_requests import sync_checks, sync_pull_requests

from .factories import PullRequestFactory, RepositoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(httpserver) -> FakeGitHub:
    return FakeGitHub(httpserver)


@pytest.fixture
def host(github):
    with use_code_host(GitHubCodeHost(api_url=github.api_url, token=TOKEN)) as host:
        yield host


@pytest.fixture
def repository():
    return RepositoryFactory(url="https://github.com/acme/api.git", metadata={})


def _day(day: int) -> str:
    return f"2026-03-{day:02d}T10:00:00Z"


def test_pull_request_sync__pages_through_link_headers_with_every_state(github, host, repository):
    github.add_pull(1, updated_at=_day(1), state="closed", merged_at=_day(1), author="bob")
    github.add_pull(2, updated_at=_day(2), state="closed")
    github.add_pull(3, updated_at=_day(3), title="Add billing")
    github.add_pull(4, updated_at=_day(4))
    github.add_pull(5, updated_at=_day(5))
    github.files[3] = ["billing/api.py", "tests/test_billing.py"]

    result = sync_pull_requests(repository.pk)

    assert (result.created, result.updated) == (5, 0)
    states = dict(PullRequest.objects.values_list("number", "state"))
    assert states == {1: "merged", 2: "closed", 3: "open", 4: "open", 5: "open"}
    third = PullRequest.objects.get(number=3)
    assert (third.title, third.author, third.changed_files) == (
        "Add billing",
        "ada",
        ["billing/api.py", "tests/test_billing.py"],
    )
    listing = [path for path in github.paths() if path.split("?")[0].endswith("/pulls")]
    assert len(listing) == 3  # 5 pull requests, 2 a page
    assert "state=all" in listing[0] and "page=3" in listing[2]
    assert "GitHub REST API" in result.source


def test_pull_request_sync__an_unchanged_repository_costs_one_conditional_request(github, host, repository):
    github.add_pull(1, updated_at=_day(1))
    sync_pull_requests(repository.pk)
    before = len(github.requests)

    result = sync_pull_requests(repository.pk)

    assert result.not_modified and (result.created, result.updated) == (0, 0)
    assert len(github.requests) == before + 1
    assert github.requests[-1].headers["If-None-Match"].startswith('W/"')
    repository.refresh_from_db()
    assert repository.host_state["pulls"]["etag"]  # the cursor survives a 304


def test_pull_request_sync__reads_only_what_changed_since_the_last_sync(github, host, repository):
    for number in range(1, 6):
        github.add_pull(number, updated_at=_day(number))
    sync_pull_requests(repository.pk)
    github.add_pull(2, updated_at=_day(20), title="Reworked", state="closed", merged_at=_day(20))
    github.page_size = 3  # page 1: #2 (changed), #5 (as of the cursor), #4 (older: the end)
    start = len(github.requests)

    result = sync_pull_requests(repository.pk)

    assert (result.created, result.updated) >= (0, 1)
    assert PullRequest.objects.get(number=2).state == "merged"
    pages = [r for r in github.requests[start:] if r.path.endswith("/pulls")]
    assert len(pages) == 1  # page 1 reached pull requests older than the cursor: no page 2
    repository.refresh_from_db()
    assert repository.host_state["pulls"]["since"].startswith("2026-03-20")


def test_http__a_429_with_retry_after_reschedules_instead_of_failing(github, host, repository):
    github.trouble.append((429, {"Retry-After": "120"}, b'{"message": "slow down"}'))
    before = datetime.now(UTC)
    with pytest.raises(jobs.RetryLater) as wait:
        sync_pull_requests(repository.pk)
    assert before + timedelta(seconds=119) <= wait.value.at <= datetime.now(UTC) + timedelta(seconds=121)
    assert "acme/api" in wait.value.reason


def test_http__an_exhausted_rate_limit_waits_for_its_reset(github, host, repository):
    reset = int((datetime.now(UTC) + timedelta(minutes=10)).timestamp())
    github.trouble.append(
        (
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
            b'{"message": "API rate limit exceeded"}',
        )
    )
    with pytest.raises(jobs.RetryLater) as wait:
        sync_pull_requests(repository.pk)
    assert int(wait.value.at.timestamp()) == reset + 1


def test_http__a_500_is_a_retryable_failure(github, host, repository):
    github.trouble.append((500, {}, b"{}"))
    with pytest.raises(ProviderUnavailable, match="GitHub answered 500 for repository acme/api") as failure:
        sync_pull_requests(repository.pk)
    assert isinstance(failure.value, jobs.RetryableError)


def test_http__malformed_json_is_a_clear_failure(github, host, repository):
    github.trouble.append((200, {}, b'[{"number": 1,'))
    with pytest.raises(ProviderAnswerInvalid, match="malformed JSON"):
        sync_pull_requests(repository.pk)


def test_http__bad_credentials_fail_at_once_naming_the_repository(github, repository):
    with (
        use_code_host(GitHubCodeHost(api_url=github.api_url, token="wrong")),
        pytest.raises(ProviderRefused, match="refused the credentials for repository acme/api") as failure,
    ):
        sync_pull_requests(repository.pk)
    assert isinstance(failure.value, jobs.PermanentError)
    assert "wrong" not in str(failure.value)


def test_http__an_answer_over_the_size_limit_is_not_read(github, host, repository, settings):
    settings.HTTP_MAX_RESPONSE_BYTES = 2048
    github.trouble.append((200, {}, b"[" + b'{"number": 1},' * 500 + b"{}]"))
    with pytest.raises(ProviderAnswerInvalid, match="more than 2,048 bytes"):
        sync_pull_requests(repository.pk)


def test_http__a_compressed_answer_is_measured_as_it_is_decoded_and_stopped_at_the_limit(
    github, host, repository, settings
):
    settings.HTTP_MAX_RESPONSE_BYTES = 1024 * 1024
    bomb = gzip_bomb(200 * 1024 * 1024)  # 200 MB of zeros, gzipped twice: a few kilobytes
    assert len(bomb) < 10_000
    github.trouble.append((200, {"Content-Encoding": "gzip, gzip"}, bomb))
    tracemalloc.start()
    try:
        with pytest.raises(ProviderAnswerInvalid, match="more than 1,048,576 bytes"):
            sync_pull_requests(repository.pk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # a few pieces of the answer, never the whole of it


def test_http__an_answer_in_an_encoding_the_client_cannot_read_is_a_clear_failure(github, host, repository):
    github.trouble.append((200, {"Content-Encoding": "br"}, b"\x1b\x03\x00"))
    with pytest.raises(ProviderAnswerInvalid, match="encoding this client does not read"):
        sync_pull_requests(repository.pk)


def test_http__a_gzipped_answer_within_the_limit_is_read(github, host, repository):
    pull = github.add_pull(1, updated_at=_day(2))
    github.trouble.append((200, {"Content-Encoding": "gzip"}, gzip.compress(json.dumps([pull]).encode())))
    sync_pull_requests(repository.pk)
    assert list(PullRequest.objects.filter(repository=repository).values_list("number", flat=True)) == [1]


def test_http__a_host_dripping_its_answer_is_stopped_at_the_deadline(settings):
    settings.HTTP_TIMEOUT = 5  # each byte arrives well within it
    settings.HTTP_DEADLINE = 1
    server = DrippingServer(interval=0.05)
    try:
        with (
            HttpClient(base_url=server.url, subject="repository acme/api", host_name="GitHub") as client,
            pytest.raises(ProviderUnavailable, match="in whole within 1s \\(HTTP_DEADLINE\\)"),
        ):
            client.get("pulls")
        assert server.accepted
    finally:
        server.close()


def test_http__a_next_page_on_another_host_is_refused(github, host, repository):
    github.trouble.append((200, {"Link": '<https://elsewhere.example/steal>; rel="next"'}, b"[]"))
    with pytest.raises(ProviderAnswerInvalid, match="another host"):
        sync_pull_requests(repository.pk)
    assert all("elsewhere" not in path for path in github.paths())


def test_http__a_host_that_does_not_answer_times_out_as_a_retryable_failure(settings):
    settings.HTTP_TIMEOUT = 0.3
    silent = SilentServer()
    try:
        with (
            HttpClient(base_url=silent.url, subject="repository acme/api", host_name="GitHub") as client,
            pytest.raises(ProviderUnavailable, match="did not answer within 0.3s for repository acme/api"),
        ):
            client.get("pulls")
    finally:
        silent.close()


def test_rate_limited_until__reads_retry_after_as_seconds_or_a_date_and_ignores_other_answers():
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert rate_limited_until(429, {"retry-after": "30"}, now) == now + timedelta(seconds=30)
    assert rate_limited_until(403, {"retry-after": "Sun, 01 Mar 2026 12:05:00 GMT"}, now) == now + timedelta(
        minutes=5
    )
    assert rate_limited_until(429, {}, now) == now + timedelta(seconds=60)
    assert rate_limited_until(403, {"x-ratelimit-remaining": "12"}, now) is None  # a plain 403
    assert rate_limited_until(500, {"retry-after": "30"}, now) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "²"},
        {"retry-after": "99999999999999999999999999"},
        {"retry-after": "Sun, 01 Mar 99999 12:05:00 GMT"},
        {"retry-after": "Sun, 01 Mar 2026 25:99:00 GMT"},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "999999999999999"},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "²"},
    ],
)
def test_rate_limited_until__a_header_that_is_not_a_time_still_gives_a_wait_within_six_hours(headers):
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    until = rate_limited_until(429, headers, now)
    assert until is not None and now <= until <= now + timedelta(hours=6)


def test_http__rate_limit_headers_that_are_not_times_still_reschedule_within_six_hours(
    github, host, repository
):
    github.trouble.append((429, {"Retry-After": "²"}, b"{}"))
    github.trouble.append(
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "999999999999999"}, b"{}")
    )
    for _ in range(2):
        with pytest.raises(jobs.RetryLater) as wait:
            sync_pull_requests(repository.pk)
        assert datetime.now(UTC) <= wait.value.at <= datetime.now(UTC) + timedelta(hours=6)


def test_checks_sync__records_check_runs_statuses_and_latest_approvals(github, host, repository):
    pull = PullRequestFactory(repository=repository, number=7, supervised=True, head_sha="abc123")
    github.check_runs["abc123"] = [
        {"name": "tests", "status": "completed", "conclusion": "success", "html_url": "https://ci/1"},
        {"name": "lint", "status": "in_progress", "conclusion": None},
    ]
    github.statuses["abc123"] = [{"context": "deploy/preview", "state": "success", "target_url": None}]
    github.reviews[7] = [
        {"user": {"login": "bob"}, "state": "APPROVED"},
        {"user": {"login": "cy"}, "state": "APPROVED"},
        {"user": {"login": "cy"}, "state": "CHANGES_REQUESTED"},
        {"user": {"login": "dee"}, "state": "COMMENTED"},
    ]

    assert sync_checks(repository.pk) == 1

    pull.refresh_from_db()
    assert pull.ci_status == "pending"
    assert [(c["kind"], c["name"]) for c in pull.checks] == [
        ("check_run", "tests"),
        ("check_run", "lint"),
        ("status", "deploy/preview"),
    ]
    assert pull.approvals == ["bob"]


def test_capsules_retrospective__reads_the_last_merged_pull_requests_with_diff_stats_and_checks(
    github, host, repository
):
    github.add_pull(
        1, updated_at=_day(3), state="closed", merged_at=_day(2), additions=40, deletions=2, head_sha="a1"
    )
    github.add_pull(
        2, updated_at=_day(4), state="closed", merged_at=_day(4), additions=5, deletions=9, head_sha="b2"
    )
    github.add_pull(3, updated_at=_day(5), state="closed")  # closed without merging
    github.files[2] = ["api/views.py"]
    github.check_runs["b2"] = [{"name": "tests", "status": "completed", "conclusion": "failure"}]
    github.reviews[2] = [{"user": {"login": "bob"}, "state": "APPROVED"}]

    assert capsules.build_retrospective(repository.pk, limit=5) == 2

    capsule = ReviewCapsule.objects.get(pull_request__number=2)
    assert capsule.data["diff_stats"] == "+5 -9"
    assert capsule.data["changed_files"] == ["api/views.py"]
    assert (capsule.data["ci_status"], capsule.data["approvals"]) == ("failure", ["bob"])
    assert not PullRequest.objects.filter(number=3).exists()


def test_github__enterprise_api_url_with_a_path_prefix(httpserver, repository):
    github = FakeGitHub(httpserver, prefix="/api/v3")
    github.add_pull(1, updated_at=_day(1))
    with use_code_host(GitHubCodeHost(api_url=github.api_url, token=TOKEN)):
        assert sync_pull_requests(repository.pk).created == 1
    assert github.paths()[0].startswith("/api/v3/repos/acme/api/pulls")


def test_code_host__settings_select_github_and_the_stored_default_says_what_it_is(settings):
    assert isinstance(code_host(), StoredCodeHost)
    assert "embedded default" in code_host().label
    settings.CODE_HOST, settings.GITHUB_API_URL, settings.GITHUB_TOKEN = (
        "github",
        "https://ghe.example/api/v3",
        "t",
    )
    chosen = code_host()
    assert (
        isinstance(chosen, GitHubCodeHost) and chosen.label == "GitHub REST API at https://ghe.example/api/v3"
    )


@pytest.mark.parametrize(
    ("url", "full_name"),
    [
        ("https://github.com/acme/api.git", "acme/api"),
        ("https://***@github.com/acme/api", "acme/api"),
        ("git@github.com:acme/api.git", "acme/api"),
        ("ssh://git@ghe.example:2222/acme/api.git", "acme/api"),
    ],
)
def test_repository_full_name__is_read_from_the_url(url, full_name):
    assert repository_full_name(RepositoryFactory.build(url=url)) == full_name


@pytest.mark.django_db(transaction=True)
def test_pull_request_sync__rate_limited_in_a_real_worker_waits_and_then_succeeds_on_one_attempt(
    github, repository, start_worker
):
    github.add_pull(1, updated_at=_day(1))
    github.trouble.append((429, {"Retry-After": "1"}, b'{"message": "secondary rate limit"}'))
    job = jobs.enqueue("pullrequest.sync", {"repository_id": repository.pk})
    start_worker(
        "--concurrency",
        "1",
        "--poll-interval",
        "0.1",
        env={"CODE_HOST": "github", "GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": TOKEN},
    )

    done = wait_status(job.pk, "succeeded", timeout=60)

    assert (done.attempts, done.error) == (1, "")
    assert PullRequest.objects.filter(repository=repository, number=1).exists()
    statuses = [request.path for request in github.requests]
    assert statuses.count("/repos/acme/api/pulls") == 2  # the 429, then the answer


def test_pull_request_sync__nul_characters_and_lone_surrogates_are_stored_cleaned(github, host, repository):
    """One pull request holding ``\\u0000`` must not stop the sync of every other."""
    github.add_pull(1, updated_at=_day(1), title="Fix\u0000 the build", body="Steps:\u0000 run \ud83d it")
    github.add_pull(2, updated_at=_day(2), author="b\u0000ob")
    github.check_runs["1".zfill(40)] = [
        {"name": "lint\u0000", "status": "completed", "conclusion": "success", "output": {"title": "\u0000"}}
    ]
    PullRequestFactory(repository=repository, number=1, supervised=True, head_sha="1".zfill(40))

    result = sync_pull_requests(repository.pk)
    sync_checks(repository.pk)

    assert (result.created, result.updated) == (1, 1)
    first, second = PullRequest.objects.order_by("number")
    assert (first.title, first.body) == ("Fix the build", "Steps: run \ufffd it")
    assert second.author == "bob"
    assert [check["name"] for check in first.checks] == ["lint"]
