"""Facts for prompts, read from what the workspace has recorded: one short line each, in a
fixed order, so the same record always gives the same prompt (and the same local digest).

Nothing here reads files or calls out: only rows that ingest and the syncs wrote.
"""

from __future__ import annotations

from workspaces.models import PullRequest, Repository, SourceItem, Workspace

MAX_PATHS = 40
MAX_FINDINGS = 30
MAX_PULLS = 10
MAX_ITEMS = 15
BODY_CHARS = 400


def repository(repo: Repository, architecture: dict | None = None) -> list[str]:
    """What ingest (and analyse, when it ran) found: kind, languages, size, layout, findings."""
    architecture = architecture or repo.architecture or {}
    facts = [
        f"Repository: {repo.name}",
        f"Kind: {repo.kind or 'unclassified'}; main language: {repo.primary_language or 'unknown'}",
        f"Size: {repo.file_count} files, {repo.line_count} lines",
    ]
    if repo.languages:
        counts = sorted(repo.languages.items(), key=lambda item: (-item[1], item[0]))
        facts.append("Languages by files: " + ", ".join(f"{name} {count}" for name, count in counts))
    for component in architecture.get("components", []):
        languages = ", ".join(component.get("languages", {}))
        facts.append(f"Component {component['name']}: {component['files']} files ({languages or 'no code'})")
    facts += [f"Entry point: {path}" for path in architecture.get("entry_points", [])]
    facts += [
        f"Finding {finding['rule']} in {finding['path'] or 'the repository'}: {finding.get('message', '')}"
        for finding in repo.findings[:MAX_FINDINGS]
    ]
    if len(repo.findings) > MAX_FINDINGS:
        facts.append(f"{len(repo.findings) - MAX_FINDINGS} more findings not listed")
    shown = repo.paths[:MAX_PATHS]
    if shown:
        more = f" (and {len(repo.paths) - len(shown)} more)" if len(repo.paths) > len(shown) else ""
        facts.append("Files: " + ", ".join(shown) + more)
    return facts


def pull_request(pull: PullRequest) -> list[str]:
    """A pull request as the code host reported it, with its checks and approvals."""
    facts = [
        f"Pull request #{pull.number}: {pull.title}",
        f"State: {pull.state}; author: {pull.author or 'unknown'}"
        + (f"; merged {pull.merged_at:%Y-%m-%d}" if pull.merged_at else ""),
    ]
    if pull.body.strip():
        facts.append(f"Description: {pull.body.strip()[:BODY_CHARS]}")
    facts += [f"Changed file: {path}" for path in pull.changed_files]
    if not pull.changed_files:
        facts.append("No changed files recorded")
    if pull.ci_status:
        facts.append(f"CI status: {pull.ci_status}")
    for check in pull.checks:
        if isinstance(check, dict):
            facts.append(
                f"Check {check.get('name', '?')}: {check.get('conclusion') or check.get('status', '?')}"
            )
    if pull.approvals:
        facts.append("Approved by: " + ", ".join(str(who) for who in pull.approvals))
    return facts


def findings_in(repo: Repository, paths: list[str]) -> list[str]:
    """Findings of the scan in these files (what a test plan should look at first)."""
    wanted = set(paths)
    return [
        f"Finding {finding['rule']} in changed file {finding['path']}: {finding.get('message', '')}"
        for finding in repo.findings
        if finding.get("path") in wanted
    ]


def recent_pull_requests(repo: Repository) -> list[str]:
    pulls = repo.pull_requests.order_by("-number")[:MAX_PULLS]
    return [f"Recent pull request #{pull.number} ({pull.state}): {pull.title}" for pull in pulls]


def work_items(workspace: Workspace) -> list[str]:
    items = SourceItem.objects.filter(connection__workspace=workspace, deleted_at__isnull=True).order_by(
        "-updated_at_source", "external_id"
    )
    return [
        f"Work item {item.external_id} ({item.status or 'no status'}): {item.title}"
        for item in items[:MAX_ITEMS]
    ]
