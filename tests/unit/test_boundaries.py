"""Module boundaries, read from the source: the domain apps use the engine only through
``jobs`` itself, the engine's core never imports its ``django.tasks`` adapter, and the
core's modules import one another in one direction."""

from __future__ import annotations

import ast
import importlib
from graphlib import TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "jobs"
# The django.tasks adapter: its package, and the path users' settings name its backend by.
ADAPTER = ("jobs.django_tasks", "jobs.backends")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _in_adapter(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in ADAPTER)


# Every module of the engine but its migrations and its adapter: the core, none left out.
CORE_PATHS = {
    _module_name(path): path
    for path in sorted(ENGINE.rglob("*.py"))
    if "migrations" not in path.parts and not _in_adapter(_module_name(path))
}
# The core's top-level modules (jobs/*.py), which import one another in one direction.
TOP_LEVEL = sorted(name for name, path in CORE_PATHS.items() if path.parent == ENGINE and name != "jobs")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # ``from jobs import store`` imports the submodule jobs.store.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _engine_modules_named(path: Path) -> list[str]:
    """The engine's modules below ``jobs`` that ``path`` imports, e.g. "jobs.models"."""
    named = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named += [alias.name for alias in node.names if alias.name.startswith("jobs.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jobs."):
            named.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.module == "jobs":
            # ``from jobs import enqueue`` is the public API; ``from jobs import store`` is not.
            named += [
                f"jobs.{alias.name}"
                for alias in node.names
                if (ENGINE / f"{alias.name}.py").exists() or (ENGINE / alias.name).is_dir()
            ]
    return named


def test_domain_apps_import_only_the_engines_public_module():
    offenders = {
        str(path.relative_to(ROOT)): _engine_modules_named(path)
        for app in ("pipeline", "workspaces", "language_models")
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts and _engine_modules_named(path)
    }
    assert offenders == {}


# This repository's platform and tooling: the engine's distribution ships none of them.
PLATFORM = ("config", "pipeline", "workspaces", "language_models", "bench", "tests", "deploy", "scripts")


def test_the_engine_imports_nothing_of_the_platform():
    """The wheel holds ``jobs`` alone: a module of it importing the platform would fail in
    any other project (the install proof would find it only on the paths it runs)."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(name for name in _imports(path) if name.split(".")[0] in PLATFORM)
        for path in sorted(ENGINE.rglob("*.py"))
    }
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_core_is_every_engine_module_outside_the_adapter():
    assert {"jobs.registry", "jobs.store", "jobs.retries", "jobs.worker.child", "jobs.admin.filters"} <= set(
        CORE_PATHS
    )
    assert not any(_in_adapter(name) for name in CORE_PATHS)
    assert (ENGINE / "django_tasks" / "backend.py").exists()  # the adapter is where ADAPTER says


def test_no_core_module_imports_the_django_tasks_adapter():
    offenders = {
        name: sorted(imported for imported in _imports(path) if _in_adapter(imported))
        for name, path in CORE_PATHS.items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_engine_core_modules_import_each_other_in_one_direction():
    graph = {
        name: {other for other in TOP_LEVEL if other in _imports(CORE_PATHS[name]) and other != name}
        for name in TOP_LEVEL
    }
    assert graph["jobs.models"] == set(), "the models import no other part of the engine"
    assert "jobs.store" not in graph["jobs.registry"], "the registry does not import the store"
    # Raises CycleError, naming the circle, if any two modules import each other.
    assert list(TopologicalSorter(graph).static_order())


DOMAINS = ("pipeline", "workspaces", "language_models")


def _domain_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for app in DOMAINS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
    }


def test_domain_apps_link_jobs_through_the_engines_api_not_its_url_names():
    # jobs.admin_url(job) and jobs.admin_list_url(...): the engine owns its admin's names.
    offenders = [name for name, text in _domain_sources().items() if "admin:platform_job" in text]
    assert offenders == []


@pytest.mark.parametrize(
    ("app", "count"),
    [
        # The seed's eleven, the removal of a deleted record's checkout, and two workflow steps.
        ("workspaces", 14),
        ("pipeline", 5),  # processing, the sweep, and the email index's catch-up, rebuild, forget
    ],
)
def test_job_type_names_are_spelled_once_and_declared_under_them(app, count):
    """Each name is written in the app's ``job_types.py`` only, and its ``tasks.py``
    declares exactly those types: a name spelled again elsewhere drifts unseen."""
    from jobs import registry

    job_types = importlib.import_module(f"{app}.job_types")
    names = [value for key, value in vars(job_types).items() if key.isupper()]
    assert len(names) == count
    spelled = {
        name: [path for path, text in _domain_sources().items() if f'"{name}"' in text] for name in names
    }
    assert spelled == {name: [f"{app}/job_types.py"] for name in names}
    declared = {t.name for t in registry.all_types() if t.func.__module__ == f"{app}.tasks"}
    assert declared == set(names)


def _provider_imports() -> dict[str, set[str]]:
    folder = ROOT / "workspaces" / "providers"
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    return {
        name: {
            other for other in modules if f"workspaces.providers.{other}" in _imports(folder / f"{name}.py")
        }
        for name in modules
    }


def test_providers__the_interfaces_import_no_implementation_and_no_fake_ships():
    graph = _provider_imports()
    # text.py cleans what providers answer before it is stored: a leaf that imports nothing.
    assert graph["text"] == set()
    assert graph["base"] <= {"text"}, "base.py holds the interfaces and their data only"
    assert list(TopologicalSorter(graph).static_order())  # CycleError names a circle
    assert not (ROOT / "workspaces" / "providers" / "memory.py").exists()  # tests/support/providers.py
