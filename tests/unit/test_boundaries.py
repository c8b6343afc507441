"""Module boundaries, read from the source: the domain apps use the engine only through
``jobs`` itself, and the engine's core modules import one another in one direction."""

from __future__ import annotations

import ast
from graphlib import TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ["context", "errors", "keys", "models", "registry", "store", "queries", "declare", "timers"]


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
                if (ROOT / "jobs" / f"{alias.name}.py").exists() or (ROOT / "jobs" / alias.name).is_dir()
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


def _core_graph() -> dict[str, set[str]]:
    graph = {}
    for name in CORE:
        imported = _imports(ROOT / "jobs" / f"{name}.py")
        graph[name] = {other for other in CORE if f"jobs.{other}" in imported and other != name}
    return graph


def test_engine_core_modules_import_each_other_in_one_direction():
    graph = _core_graph()
    assert graph["models"] == set(), "the models import no other part of the engine"
    assert "store" not in graph["registry"], "the registry does not import the store"
    # Raises CycleError, naming the circle, if any two modules import each other.
    assert list(TopologicalSorter(graph).static_order())
