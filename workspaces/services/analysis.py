"""repository.analyse: turn an ingested repository into a summary and an architecture map."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import PurePosixPath

from django.db import transaction
from django.utils import timezone

import language_models
from language_models import Prompt
from workspaces import job_types
from workspaces.ai import artifacts, facts
from workspaces.errors import NotReady
from workspaces.models import Repository
from workspaces.services import Progress, load, no_progress
from workspaces.services.ingest import LANGUAGES

ENTRY_POINTS = {"manage.py", "main.py", "app.py", "index.js", "main.go", "Dockerfile", "Makefile"}


def architecture_map(paths: list[str]) -> dict:
    """Components are the top-level folders (files at the root form "(root)")."""
    components: dict[str, Counter[str]] = defaultdict(Counter)
    entry_points = []
    for path in paths:
        parts = PurePosixPath(path).parts
        component = parts[0] if len(parts) > 1 else "(root)"
        components[component][LANGUAGES.get(PurePosixPath(path).suffix.lower(), "other")] += 1
        if parts[-1] in ENTRY_POINTS:
            entry_points.append(path)
    return {
        "components": [
            {"name": name, "files": sum(counts.values()), "languages": dict(counts.most_common())}
            for name, counts in sorted(components.items())
        ],
        "entry_points": sorted(entry_points),
    }


def summary_prompt(repository: Repository, architecture: dict) -> Prompt:
    return Prompt(
        task=job_types.ANALYSE_REPOSITORY,
        instruction=(
            f"Summarise repository {repository.name} for an engineer who is new to it, in at most "
            "250 words: what it is for, how it is organised, where to start reading, and the "
            "risks its findings point at."
        ),
        facts=(*facts.repository(repository, architecture), *facts.recent_pull_requests(repository)),
    )


def analyse_repository(repository_id: int, progress: Progress = no_progress) -> Repository:
    repository = load(Repository, repository_id)
    if repository.status == Repository.Status.NEW:
        raise NotReady(f"Repository {repository.name!r} has not been ingested yet.")
    progress(10, "Mapping the architecture")
    architecture = architecture_map(repository.paths)
    prompt = summary_prompt(repository, architecture)
    progress(40, f"Writing the summary ({language_models.provider_name()})")
    answer = language_models.complete(prompt)
    with transaction.atomic():
        repository.summary = answer.text
        repository.architecture = architecture
        repository.status = Repository.Status.ANALYSED
        repository.analysed_at = timezone.now()
        repository.save(update_fields=["summary", "architecture", "status", "analysed_at"])
        artifacts.keep(
            answer,
            kind=job_types.ANALYSE_REPOSITORY,
            workspace=repository.workspace_id,
            repository=repository,
            data=architecture,
        )
    progress(100, "Analysed")
    return repository
