"""How long a webhook delivery takes to answer, and how many statements it costs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/jp_webhook_bench .venv/bin/python -m bench.webhooks

Connects --repositories GitHub repositories and as many Jira connections, then posts
--deliveries signed deliveries of each kind (a push to the default branch, a pull request,
a Jira issue update) through Django's test Client (the whole middleware stack, PostgreSQL,
no network), each with a new delivery id, plus as many replays of one delivery. Prints the
median, 95th percentile and max answer time per kind and the statements one delivery runs.
The tables are wiped first: use a database of your own.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import statistics
import time
import uuid

from bench.lib import project

project.setup("jp_webhook_bench")

from django.conf import settings  # noqa: E402 - after project.setup()
from django.core.management import call_command  # noqa: E402 - after project.setup()
from django.db import connection  # noqa: E402 - after project.setup()
from django.test import Client  # noqa: E402 - after project.setup()
from django.test.utils import CaptureQueriesContext  # noqa: E402 - after project.setup()

from workspaces.models import Organization, Repository, WorkConnection, Workspace  # noqa: E402

SECRET = "bench-webhook-secret-0123456789abcdef"


def fill(repositories: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE jobs_job, jobs_attempt, workspaces_webhookdelivery, workspaces_repository, "
            "workspaces_workconnection, workspaces_workspace, workspaces_organization RESTART IDENTITY CASCADE"
        )
    org = Organization.objects.create(name="Bench", billing_email="bench@example.com")
    workspace = Workspace.objects.create(organization=org, name="Bench")
    Repository.objects.bulk_create(
        Repository(workspace=workspace, name=f"repo-{n}", url=f"https://github.com/acme/repo-{n}.git")
        for n in range(repositories)
    )
    WorkConnection.objects.bulk_create(
        WorkConnection(workspace=workspace, kind="jira", name=f"P{n}", external_id=f"P{n}")
        for n in range(repositories)
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE workspaces_repository, workspaces_workconnection, jobs_job")


def signed(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def github(event: str, payload: dict, delivery: str) -> tuple[str, bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signed(body)}
    return "/webhooks/github/", body, headers


def jira(project: str, delivery: str) -> tuple[str, bytes, dict[str, str]]:
    payload = {
        "webhookEvent": "jira:issue_updated",
        "issue": {
            "key": f"{project}-1",
            "self": "https://acme.atlassian.net/rest/api/3/issue/1",
            "fields": {"project": {"key": project, "id": "1"}},
        },
    }
    body = json.dumps(payload).encode()
    return (
        "/webhooks/jira/",
        body,
        {"X-Atlassian-Webhook-Identifier": delivery, "X-Hub-Signature": signed(body)},
    )


def repository(n: int) -> dict:
    return {
        "full_name": f"acme/repo-{n}",
        "html_url": f"https://github.com/acme/repo-{n}",
        "default_branch": "main",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repositories", type=int, default=1000)
    parser.add_argument("--deliveries", type=int, default=300)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    fill(args.repositories)
    settings.GITHUB_WEBHOOK_SECRET = [SECRET]
    settings.JIRA_WEBHOOK_SECRET = [SECRET]
    client = Client(HTTP_HOST="localhost")

    kinds = {
        "push (ingest)": lambda n, d: github(
            "push", {"ref": "refs/heads/main", "repository": repository(n % args.repositories)}, d
        ),
        "pull_request (sync)": lambda n, d: github(
            "pull_request",
            {
                "action": "edited",
                "pull_request": {"number": 1},
                "repository": repository(n % args.repositories),
            },
            d,
        ),
        "jira issue (sync)": lambda n, d: jira(f"P{n % args.repositories}", d),
        "replay of one": lambda n, d: github(
            "push", {"ref": "refs/heads/main", "repository": repository(0)}, "replayed"
        ),
    }
    print(
        f"{args.repositories:,} repositories and Jira connections; {args.deliveries} deliveries of each kind"
    )
    print(f"{'':22} {'median':>8} {'p95':>8} {'max':>8}  (ms)   statements")
    for label, make in kinds.items():
        timings = []
        for n in range(args.deliveries + 1):
            url, body, headers = make(n, str(uuid.uuid4()))
            started = time.perf_counter()
            response = client.post(url, data=body, content_type="application/json", headers=headers)
            if n:  # the first one warms the connection and the caches
                timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code in (200, 202), response.content
        url, body, headers = make(args.deliveries + 1, str(uuid.uuid4()))
        with CaptureQueriesContext(connection) as captured:
            client.post(url, data=body, content_type="application/json", headers=headers)
        timings.sort()
        p95 = timings[int(len(timings) * 0.95) - 1]
        print(
            f"{label:22} {statistics.median(timings):8.2f} {p95:8.2f} {timings[-1]:8.2f}"
            f"        {len(captured.captured_queries)}"
        )


if __name__ == "__main__":
    main()
