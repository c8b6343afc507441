"""decisions.mine: propose the decisions recorded in a workspace's pull requests and work
items, for a person to confirm. It runs on the ai queue.

A regex pass finds the statements that read like a decision ("we decided to …", "going
forward …"): the evidence. With a model configured, the model proposes the decisions those
statements record (merging statements about one decision, leaving out those that record
none), each naming the statements it rests on; with the local provider each statement is
proposed as it stands. Either way a decision keeps its evidence, quoted, and a statement
already behind a decision is not mined again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import language_models
from language_models import InvalidAnswer, Prompt
from workspaces import job_types
from workspaces.ai import artifacts
from workspaces.errors import NotReady
from workspaces.models import Decision, PullRequest, SourceItem, Workspace
from workspaces.services import Progress, load, no_progress

# Phrases that mark a sentence as a decision someone made.
DECISION = re.compile(
    r"\b(we decided|decided to|we will|we agreed|agreed to|going forward|switch(?:ed|ing)? to|"
    r"adopt(?:ed)?|instead of|deprecate[sd]?)\b",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# One model call looks at this many new statements; the rest wait for the next run.
MAX_EVIDENCE = 60
MAX_DECISIONS = 30
TITLE_CHARS = 300
QUOTE_CHARS = 500

SYSTEM = (
    "You find the decisions a software team recorded in its pull requests and work items. "
    "Use only the statements given. Answer with JSON only."
)


@dataclass(frozen=True)
class Evidence:
    """A statement found in the record, where it was found, and its hash."""

    source: str
    quote: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.quote)

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "quote": self.quote, "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Proposal:
    title: str
    evidence: tuple[Evidence, ...]

    @property
    def fingerprint(self) -> str:
        """The statements it rests on: one statement's hash, or a hash of several."""
        prints = sorted({item.fingerprint for item in self.evidence})
        return prints[0] if len(prints) == 1 else hashlib.sha256("+".join(prints).encode()).hexdigest()


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
    items = SourceItem.objects.filter(connection__workspace=workspace, deleted_at__isnull=True).order_by(
        "connection_id", "external_id"
    )
    for item in items:
        yield f"item:{item.external_id}", f"{item.title}.\n{item.description}"


def find_evidence(workspace: Workspace) -> list[Evidence]:
    """The regex pass: every statement that reads like a decision, once, where first found."""
    found: dict[str, Evidence] = {}
    for source, text in _record(workspace):
        for statement in statements(text):
            evidence = Evidence(source[:200], statement[:QUOTE_CHARS])
            found.setdefault(evidence.fingerprint, evidence)
    return list(found.values())


def known_statements(workspace: Workspace) -> set[str]:
    """The fingerprints of the statements some decision of the workspace already rests on."""
    known: set[str] = set()
    for key, evidence in Decision.objects.filter(workspace=workspace).values_list("fingerprint", "evidence"):
        known.add(key)
        known.update(item.get("fingerprint", "") for item in evidence if isinstance(item, dict))
    return known


def decision_prompt(workspace: Workspace, evidence: list[Evidence]) -> Prompt:
    return Prompt(
        task=job_types.MINE_DECISIONS,
        system=SYSTEM,
        json=True,
        instruction=(
            f"The numbered statements below were found in the pull requests and work items of "
            f"workspace {workspace.name}; each reads like a decision someone made. Propose the "
            "decisions they record: merge statements about the same decision, leave out those "
            "that record none, and word each decision as one plain sentence of under 200 "
            'characters. Answer with JSON only, exactly of the shape {"decisions": [{"title": '
            '"…", "evidence": [1, 2]}]}, where evidence lists the numbers of the statements the '
            f"decision rests on. At most {MAX_DECISIONS} decisions."
        ),
        facts=tuple(f"[{number}] {item.source}: {item.quote}" for number, item in enumerate(evidence, 1)),
    )


def read_proposals(answer: dict[str, Any], evidence: list[Evidence]) -> list[Proposal]:
    """The model's proposals, each resting on statements it was given; InvalidAnswer for
    any other shape (a retry may give a valid one)."""
    items = answer.get("decisions")
    if not isinstance(items, list) or len(items) > MAX_DECISIONS:
        raise InvalidAnswer(
            f'The model\'s answer is not {{"decisions": [at most {MAX_DECISIONS} decisions]}}.'
        )
    proposals = []
    for item in items:
        title = item.get("title") if isinstance(item, dict) else None
        numbers = item.get("evidence") if isinstance(item, dict) else None
        if not isinstance(title, str) or not title.strip() or len(title) > TITLE_CHARS:
            raise InvalidAnswer(
                f"The model proposed a decision without a title of 1 to {TITLE_CHARS} characters."
            )
        if (
            not isinstance(numbers, list)
            or not numbers
            or not all(type(n) is int and 1 <= n <= len(evidence) for n in numbers)
        ):
            raise InvalidAnswer(
                f"The model proposed {title[:80]!r} without evidence numbers between 1 and {len(evidence)}."
            )
        proposals.append(
            Proposal(" ".join(title.split()), tuple(evidence[n - 1] for n in sorted(set(numbers))))
        )
    return proposals


def mine_decisions(workspace_id: int, progress: Progress = no_progress) -> int:
    """Returns how many new decisions were proposed."""
    workspace = load(Workspace, workspace_id)
    progress(10, "Reading the workspace record")
    known = known_statements(workspace)
    new = [item for item in find_evidence(workspace) if item.fingerprint not in known]
    batch = new[:MAX_EVIDENCE]
    if not batch:
        progress(100, "No new statements: 0 decisions proposed")
        return 0
    artifact = None
    if language_models.is_local():
        proposals = [Proposal(item.quote, (item,)) for item in batch]
    else:
        progress(30, f"Asking the model ({language_models.provider_name()}) about {len(batch)} statements")
        answer, proposals = language_models.complete_json(
            decision_prompt(workspace, batch), lambda value: read_proposals(value, batch)
        )
        artifact = artifacts.keep(
            answer,
            kind=job_types.MINE_DECISIONS,
            workspace=workspace,
            data={"statements": len(batch), "left_for_next_run": len(new) - len(batch)},
        )
    unique: dict[str, Proposal] = {}
    for proposal in proposals:
        unique.setdefault(proposal.fingerprint, proposal)
    taken = set(
        Decision.objects.filter(workspace=workspace, fingerprint__in=unique).values_list(
            "fingerprint", flat=True
        )
    )
    rows = [
        Decision(
            workspace=workspace,
            title=proposal.title[:500],
            source=proposal.evidence[0].source,
            fingerprint=key,
            evidence=[item.as_dict() for item in proposal.evidence],
            artifact=artifact,
        )
        for key, proposal in unique.items()
        if key not in taken
    ]
    # ignore_conflicts: a concurrent run proposing the same statement is not an error.
    Decision.objects.bulk_create(rows, ignore_conflicts=True)
    left = f"; {len(new) - len(batch)} statements left for the next run" if len(new) > len(batch) else ""
    progress(100, f"{len(rows)} decisions proposed{left}")
    return len(rows)


# --- a person's answer to a proposal ----------------------------------------------------------


def accept(decision: Decision) -> str:
    return _answer(decision, Decision.Status.ACCEPTED)


def reject(decision: Decision) -> str:
    """Rejected, not deleted: the decision stays, so mining never proposes it again."""
    return _answer(decision, Decision.Status.REJECTED)


def _answer(decision: Decision, status: str) -> str:
    # One conditional UPDATE: of two people answering at once, the first one counts.
    answered = Decision.objects.filter(pk=decision.pk, status=Decision.Status.PROPOSED).update(status=status)
    if not answered:
        current = Decision.objects.filter(pk=decision.pk).values_list("status", flat=True).first()
        raise NotReady(f"“{decision}” is no longer proposed: it is {current or 'deleted'}.")
    decision.status = status
    return f"“{decision}” is {status}."
