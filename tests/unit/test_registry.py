"""The job-type registry: declarations, lookups, priorities and the decorated function's
enqueue options. No database."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from jobs import job, registry
from jobs.errors import UnknownJobType
from jobs.models import PRIORITIES, Priority
from tests.jobs_app.tasks import noop


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """Types declared by a test disappear with it."""
    before = dict(registry._registry)
    yield
    registry._registry.clear()
    registry._registry.update(before)


def _write_module(directory: Path, name: str, body: str) -> str:
    (directory / f"{name}.py").write_text(body)
    return name


def test_job__declares_a_type_with_its_options():
    @job(
        "unit.ingest",
        queue="ingestion",
        attempts=5,
        backoff=(1, 2),
        backoff_cap=10,
        timeout=3,
        priority="high",
    )
    def ingest(ctx, *, repository_id: int) -> int:
        return repository_id

    declared = registry.get("unit.ingest")
    assert (declared.queue, declared.attempts, declared.backoff, declared.backoff_cap) == (
        "ingestion",
        5,
        (1, 2),
        10,
    )
    assert (declared.timeout, declared.priority) == (3, "high")
    assert ingest.name == "unit.ingest"
    assert ingest(None, repository_id=7) == 7  # still callable as a plain function
    assert "ingestion" in registry.queues()


def test_job__defaults_are_default_queue_three_attempts_and_the_standard_backoff():
    @job("unit.defaults")
    def handler(ctx) -> None: ...

    declared = registry.get("unit.defaults")
    assert (declared.queue, declared.attempts, declared.priority, declared.timeout) == (
        "default",
        3,
        "normal",
        None,
    )
    assert (declared.backoff, declared.backoff_cap) == ((30, 120, 480), 1800)


def test_job__duplicate_name_fails_at_import(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    module = _write_module(
        tmp_path,
        "unit_duplicate_tasks",
        "from jobs import job\n\n@job('test.noop')\ndef another_noop(ctx):\n    pass\n",
    )
    with pytest.raises(ImproperlyConfigured, match="Job type 'test.noop' is declared twice"):
        importlib.import_module(module)
    sys.modules.pop(module, None)
    assert registry.get("test.noop").func is noop.job_type.func  # the first one stays


def test_job__redeclaring_the_same_function_is_harmless():
    def handler(ctx) -> None: ...

    job("unit.same")(handler)
    job("unit.same")(handler)  # e.g. a module imported twice under one name
    assert registry.get("unit.same").func is handler


@pytest.mark.parametrize(
    "options, message",
    [
        ({"attempts": 0}, "attempts must be at least 1"),
        ({"backoff": ()}, "backoff must be non-negative seconds"),
        ({"backoff": (30, -1)}, "backoff must be non-negative seconds"),
    ],
)
def test_job__refuses_a_bad_declaration(options, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        job("unit.bad", **options)
    assert "unit.bad" not in {t.name for t in registry.all_types()}


def test_get__unknown_type_is_refused_by_name():
    with pytest.raises(UnknownJobType, match="Unknown job type 'no.such'; is it declared in a tasks module"):
        registry.get("no.such")


def test_enqueue__unknown_type_is_refused_before_touching_the_database():
    from jobs import enqueue

    with pytest.raises(UnknownJobType, match="'no.such'"):
        enqueue("no.such", {})


def test_tasks_modules_of_installed_apps_are_discovered():
    names = {job_type.name for job_type in registry.all_types()}
    assert {"test.noop", "test.record", "test.ai"} <= names
    assert registry.get("test.ai").queue == "ai"
    assert registry.queues() == sorted(set(registry.queues()))


# --- priorities -----------------------------------------------------------------------------


def test_priorities__critical_runs_before_high_before_normal_before_low():
    assert sorted(PRIORITIES, key=lambda name: Priority.named(name)) == ["critical", "high", "normal", "low"]
    assert Priority(Priority.named("normal")).label == "normal"


def test_priorities__unknown_name_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="Unknown priority 'urgent'; use one of critical, high, normal, low"):
        Priority.named("urgent")
    with pytest.raises(ValueError, match="Unknown priority 'urgent'"):
        job("unit.urgent", priority="urgent")


def test_using__merges_options_and_never_changes_the_queue():
    high = noop.using(priority="high")
    keyed = high.using(dedupe_key="k")
    assert high.options == {"priority": "high"}
    assert keyed.options == {"priority": "high", "dedupe_key": "k"}
    assert noop.options == {}  # the declared function is unchanged
    assert keyed.job_type is noop.job_type
    with pytest.raises(TypeError):
        noop.using(queue="ai")


class _Resolver:
    """An adapter's resolver: knows the types named ``plug.*``, on its queue "plugged"."""

    def resolve(self, name: str) -> registry.JobType:
        if not name.startswith("plug."):
            raise UnknownJobType(f"{name!r} is not one of the plug's.")
        return registry.JobType(name=name, func=noop, queue="plugged", attempts=7)

    def queues(self) -> set[str]:
        return {"plugged"}

    def names(self) -> list[str]:
        return ["plug.one"]

    def limited_queues(self) -> set[str]:
        return set()


@pytest.fixture
def plugged() -> Iterator[_Resolver]:
    resolver = _Resolver()
    registry.add_resolver(resolver)
    registry.add_resolver(resolver)  # once, however often added
    yield resolver
    registry._resolvers.remove(resolver)


def test_add_resolver__lookup_queues_and_names_ask_an_adapters_resolver(plugged):
    assert registry.lookup("plug.one").attempts == 7
    assert registry.lookup("test.noop").func is noop.job_type.func  # a declaration comes first
    assert "plugged" in registry.queues()
    names = registry.names()
    assert names.index("plug.one") > names.index("test.noop")  # declared types first
    with pytest.raises(UnknownJobType):
        registry.get("plug.one")  # get() is for declared types only
    assert registry._resolvers.count(plugged) == 1


def test_lookup__a_name_no_resolver_knows_is_unknown_with_the_first_resolvers_reason(plugged):
    from jobs.django_tasks import types

    # The django.tasks adapter's resolver came first: its backend is created at start-up.
    assert registry._resolvers.index(types.RESOLVER) < registry._resolvers.index(plugged)
    with pytest.raises(UnknownJobType, match="no django.tasks task can be imported from it"):
        registry.lookup("no.such")
