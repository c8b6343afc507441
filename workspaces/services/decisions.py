"""decisions.mine: propose decisions found in the workspace record (pull requests and work
items). Each statement is proposed once; mining again adds only new ones."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

from workspaces.models import Decision, PullRequest, SourceItem, Workspace
from workspaces.services import Progress, load, no_progress

# Phrases that mark a sentence as a decision someone made.
DECISION = re.compile(
    r"\b(we decided|decided to|we will|we agreed|agreed to|going forward|switch(?:ed|ing)? to|"
    r"adopt(?:ed)?|instead of|deprecate[sd]?)\b",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def statements(text: str) -> Iterator[str]:
    for sentence in SENTENCE.split(text):
        sentence = " ".join(sentence.split()).strip(" -*#")
        if sentence and DECISION.search(sentence):
            yield sentence


def fingerprint(statement: str) -> str:
    return hashlib.sha256(" ".join(statement.lower().split()).rstrip(".!").encode()).hexdigest()


def _record(workspace: Workspace) -> Iterator[tuple[str, str]]:
    pulls = PullRequest.objects.filter(repository__workspace=workspace).order_by("repository_id", "number")
    for pull in pulls:
        yield f"pr:{pull.repository_id}#{pull.number}", f"{pull.title}.\n{pull.body}"
    items = SourceItem.objects.filter(connection__workspace=workspace).order_by(
        "connection_id", "external_id"
    )
    for item in items:
        yield f"item:{item.external_id}", f"{item.title}.\n{item.description}"


def mine_decisions(workspace_id: int, progress: Progress = no_progress) -> int:
    """Returns how many new decisions were proposed."""
    workspace = load(Workspace, workspace_id)
    progress(10, "Reading the workspace record")
    found: dict[str, Decision] = {}
    for source, text in _record(workspace):
        for statement in statements(text):
            key = fingerprint(statement)
            found.setdefault(
                key,
                Decision(workspace=workspace, title=statement[:500], source=source[:200], fingerprint=key),
            )
    known = set(
        Decision.objects.filter(workspace=workspace, fingerprint__in=found).values_list(
            "fingerprint", flat=True
        )
    )
    new = [decision for key, decision in found.items() if key not in known]
    # ignore_conflicts: a concurrent run proposing the same statement is not an error.
    Decision.objects.bulk_create(new, ignore_conflicts=True)
    progress(100, f"{len(new)} decisions proposed")
    return len(new)
