"""repository.analyse: turn an ingested repository into a summary and an architecture map."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import PurePosixPath

from django.db import transaction
from django.utils import timezone

from workspaces.ai.generator import get_generator
from workspaces.errors import NotReady
from workspaces.models import AIArtifact, Repository
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


def summary_prompt(repository: Repository, architecture: dict) -> str:
    lines = [f"Summarise repository {repository.name} for a new engineer."]
    lines.append(
        f"- Kind: {repository.kind or 'unknown'}; main language: {repository.primary_language or 'unknown'}"
    )
    lines.append(f"- {repository.file_count} files, {repository.line_count} lines")
    lines += [f"- Component {c['name']}: {c['files']} files" for c in architecture["components"]]
    lines += [f"- Entry point {path}" for path in architecture["entry_points"]]
    lines += [f"- Finding {f['rule']} in {f['path'] or 'the repository'}" for f in repository.findings]
    return "\n".join(lines)


def analyse_repository(repository_id: int, progress: Progress = no_progress) -> Repository:
    repository = load(Repository, repository_id)
    if repository.status == Repository.Status.NEW:
        raise NotReady(f"Repository {repository.name!r} has not been ingested yet.")
    progress(10, "Mapping the architecture")
    architecture = architecture_map(repository.paths)
    prompt = summary_prompt(repository, architecture)
    progress(40, "Writing the summary")
    generation = get_generator().generate(prompt, task="repository.analyse")
    with transaction.atomic():
        repository.summary = generation.text
        repository.architecture = architecture
        repository.status = Repository.Status.ANALYSED
        repository.analysed_at = timezone.now()
        repository.save(update_fields=["summary", "architecture", "status", "analysed_at"])
        AIArtifact.objects.create(
            workspace_id=repository.workspace_id,
            repository=repository,
            kind="repository.analyse",
            model=generation.model,
            prompt=prompt,
            output=generation.text,
            data=architecture,
        )
    progress(100, "Analysed")
    return repository
