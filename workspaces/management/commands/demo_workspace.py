"""``manage.py demo_workspace``: a workspace on a real git repository, with no network.

Creates a small git repository under ``VAR_DIR/demo-git`` (a bare "origin" and a work tree
that pushes to it), connects it to a new workspace (which starts the ``workspace.provision``
workflow: ingest, ready, brain.derive, decisions.mine), presses Sync now
(``pullrequest.sync`` against the embedded code host: the pull requests stored with the
repository), and runs a real ``runworker --burst``; it prints the provisioning workflow's
graph, column by column. Then it pushes a new commit, presses Re-index, supervises a pull
request, presses Sync now again (which queues ``checks.sync``) and runs the worker again:
the second ingest fetches the push.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

import jobs
from workspaces import job_types
from workspaces.models import Organization, Repository, Workspace
from workspaces.providers import code_host
from workspaces.services import triggers

WORKSPACE = "Demo shop"
FIRST_COMMIT = {
    "manage.py": "import django\n",
    "shop/models.py": "class Order:\n    pass  # TODO: totals and taxes\n",
    "shop/views.py": "def checkout(request):\n    return None  # FIXME: validate the basket\n",
    "shop/static/cart.js": "export const total = (items) => items.reduce((a, b) => a + b.price, 0);\n",
    "tests/test_orders.py": "def test_order():\n    assert True\n",
    "config/.env": "AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\n",
    "README.md": "# Shop\n",
}
SECOND_COMMIT = {"shop/payments.py": "def charge(order):\n    return order\n"}
# What the embedded code host serves for this repository (CODE_HOST=stored).
PULL_REQUESTS = [
    {
        "number": 1,
        "title": "Add the order model",
        "state": "merged",
        "author": "ada",
        "merged_at": "2026-03-02T10:00:00Z",
        "updated_at": "2026-03-02T10:00:00Z",
        "changed_files": ["shop/models.py"],
        "additions": 12,
        "deletions": 0,
    },
    {
        "number": 2,
        "title": "We decided to switch to Stripe for payments",
        "state": "open",
        "author": "bob",
        "updated_at": "2026-03-05T09:00:00Z",
        "changed_files": ["shop/payments.py"],
    },
    {"number": 3, "title": "Experiment: GraphQL API", "state": "closed", "author": "cy"},
]
CHECKS = {"2": {"ci_status": "success", "approvals": ["ada"]}}


class Command(BaseCommand):
    help = "Ingest a real local git repository and sync its pull requests from the embedded code host."

    def handle(self, *args, **options) -> None:
        out = self.stdout
        origin = Path(settings.VAR_DIR) / "demo-git"
        out.write(f"Code host: {code_host().label}.")
        out.write(f"Working folders: {settings.REPOSITORIES_ROOT}.")

        out.write(f"\n1. A git repository with one commit at {origin / 'shop.git'}")
        bare, work = _origin(origin)
        with transaction.atomic():
            workspace = Workspace.objects.filter(name=WORKSPACE).first()
            if workspace is None:
                organization, _ = Organization.objects.get_or_create(
                    name="Demo organisation", defaults={"billing_email": "billing@example.com"}
                )
                workspace, provision = triggers.create_workspace(
                    organization,
                    name=WORKSPACE,
                    repositories=[
                        {
                            "name": "shop",
                            "url": bare.as_uri(),
                            "metadata": {"pull_requests": PULL_REQUESTS, "checks": CHECKS},
                        }
                    ],
                )
                out.write(f"   workspace {workspace.name!r} created: {_workflow(provision)}")
            repository = workspace.repositories.get(name="shop")
            out.write(f"   Sync now: {_job(triggers.request_pull_request_sync(repository))}")
        self._run_worker("first")
        self._report(repository.pk)
        self._graph(workspace.pk)

        out.write("\n2. A push to the repository, then Re-index; #2 supervised, then Sync now")
        _commit(
            work, {**SECOND_COMMIT, "README.md": f"# Shop\n\nUpdated {timezone.now():%Y-%m-%d %H:%M:%S}.\n"}
        )
        with transaction.atomic():
            out.write(f"   Re-index: {_job(triggers.request_ingest(repository))}")
            repository.pull_requests.filter(number=2).update(supervised=True)
            out.write(f"   Sync now: {_job(triggers.request_pull_request_sync(repository))}")
        self._run_worker("second")
        self._report(repository.pk)
        out.write(
            "\n   Browse them in the admin: `manage.py createsuperuser`, then `manage.py runserver` → "
            "/admin/workspaces/repository/ (Re-index and Sync now are on the repository's page)."
        )

    def _run_worker(self, run: str) -> None:
        self.stdout.write("   running `manage.py runworker --burst`")
        log_path = Path(settings.VAR_DIR) / f"demo-workspace-worker-{run}.log"
        took = jobs.run_burst_worker("--concurrency", "2", log_path=log_path)
        self.stdout.write(f"   worker finished in {took:.1f}s (log: {log_path})")

    def _report(self, repository_id: int) -> None:
        out = self.stdout
        repository = Repository.objects.get(pk=repository_id)
        ingest = jobs.latest_job(job_types.INGEST_REPOSITORY, repository_id=repository.pk)
        sync = jobs.latest_job(job_types.SYNC_PULL_REQUESTS, repository_id=repository.pk)
        checks = jobs.latest_job(job_types.SYNC_CHECKS, repository_id=repository.pk)
        for name, job in [
            (job_types.INGEST_REPOSITORY, ingest),
            (job_types.SYNC_PULL_REQUESTS, sync),
            (job_types.SYNC_CHECKS, checks),
        ]:
            if job is not None:
                out.write(f"   {name:<20} {_job(job)}{': ' + job.error[:80] if job.error else ''}")
        out.write(
            f"   repository {repository.name}: {repository.status}, commit {repository.commit_sha[:12] or '-'} "
            f"on {repository.branch or '-'}, {repository.kind}, {repository.file_count} files, "
            f"{repository.line_count} lines, languages {repository.languages}"
        )
        out.write(f"   paths: {', '.join(repository.paths)}")
        for finding in repository.findings:
            out.write(f"   finding {finding['rule']:<22} {finding['path'] or '-':<16} {finding['message']}")
        pulls = repository.pull_requests.order_by("number")
        out.write(f"   pull requests ({code_host().label}):")
        for pull in pulls:
            ci = f", CI {pull.ci_status}, approved by {', '.join(pull.approvals)}" if pull.ci_status else ""
            out.write(f"     #{pull.number} {pull.state:<7} {pull.title} ({pull.author}){ci}")

    def _graph(self, workspace_id: int) -> None:
        """The provisioning workflow as its page draws it: its steps column by column."""
        workflow = jobs.workflows_for(
            job_types.PROVISION_WORKSPACE, dedupe_key=f"workspace:{workspace_id}"
        ).first()
        if workflow is None:
            return
        out = self.stdout
        out.write(
            f"   {_workflow(workflow)}, {workflow.succeeded_steps} of {workflow.steps} steps succeeded:"
        )
        columns = itertools.groupby(jobs.workflow_steps(workflow), key=lambda step: step.depth)
        for column, (_, steps) in enumerate(columns):
            said = "  |  ".join(f"#{step.position} {step.name} {step.shown_status}" for step in steps)
            out.write(f"     {'→ ' if column else '  '}{said}")
        out.write(f"   its page, with the graph: /admin/platform/workflow/{workflow.pk}/change/")


def _job(job: jobs.Job | None) -> str:
    return f"job #{job.pk} {job.status}" if job is not None else "no job"


def _workflow(workflow: jobs.Workflow | None) -> str:
    return (
        f"workflow #{workflow.pk} {workflow.name} {workflow.status}"
        if workflow is not None
        else "no workflow"
    )


def _git(*args: str | Path, cwd: Path | None = None) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Demo",
        "GIT_AUTHOR_EMAIL": "demo@example.com",
        "GIT_COMMITTER_NAME": "Demo",
        "GIT_COMMITTER_EMAIL": "demo@example.com",
    }
    subprocess.run(["git", *map(str, args)], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def _origin(base: Path) -> tuple[Path, Path]:
    """The bare repository and its work tree, made with a first commit when missing."""
    bare, work = base / "shop.git", base / "shop"
    if not bare.exists():
        base.mkdir(parents=True, exist_ok=True)
        _git("init", "--quiet", "--bare", "--initial-branch=main", bare)
        _git("init", "--quiet", "--initial-branch=main", work)
        _git("remote", "add", "origin", bare, cwd=work)
        _commit(work, FIRST_COMMIT)
    return bare, work


def _commit(work: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    _git("add", "--all", cwd=work)
    _git("commit", "--quiet", "-m", f"Change {', '.join(files)}", cwd=work)
    _git("push", "--quiet", "origin", "main", cwd=work)
