"""What a workflow is made of, before it is started: steps, chains and groups, and the plan
``jobs.start`` writes (each step's name, column and count of upstream steps, and the
edges between them).

    jobs.step("repository.ingest", {"repository_id": 7})     one job of a declared type
    jobs.chain(a, b, c)                                     each after the previous one
    jobs.group([a, b, c], then=d)                           in parallel; d after them all

Chains and groups nest. A step is checked where it is written, as ``enqueue`` checks a job
(``jobs.validation``): its type exists, its payload and options are ones enqueue accepts.
The plan checks the whole: its size (``JOBS_WORKFLOW_MAX_STEPS``) and its names.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobs import registry, validation
from jobs.conf import jobs_settings
from jobs.errors import InvalidJobOption, InvalidPayload

#: Chains and groups nest at most this deep.
MAX_NESTING = 100
#: A plan holds at most this many edges per step allowed (a group of groups is a product).
EDGES_PER_STEP = 10
#: A step's name fits its column.
NAME_LENGTH = 200
#: The longest delay of a step: the furthest ahead a job may be due.
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Step:
    """One job of a declared type, as it will be enqueued once the steps before it
    succeeded. Every value is checked (``step()`` builds it)."""

    type: str
    queue: str
    priority: int
    payload: Mapping[str, Any]
    payload_text: str  # as stored: checked once, written as is
    dedupe_key: str | None
    max_attempts: int
    name: str | None = None
    # Its job's flow-control keys (``jobs.flow.limits``), as enqueue would store them.
    concurrency_key: str | None = None
    rate_key: str | None = None
    delay: float | None = None
    results_as: str = ""

    @property
    def default_name(self) -> str:
        """The type, and the dedupe key when it has one: ``repository.ingest[repository:7]``."""
        return f"{self.type}[{self.dedupe_key}]" if self.dedupe_key else self.type


@dataclass(frozen=True)
class Chain:
    """Each part starts when the one before it succeeded."""

    parts: tuple[Flow, ...]


@dataclass(frozen=True)
class Group:
    """The members run in parallel; ``then`` starts when every one of them succeeded."""

    members: tuple[Flow, ...]
    then: Flow | None = None


Flow = Step | Chain | Group


def _type_name(job_type: Any) -> str:
    if isinstance(job_type, str):
        return job_type
    if hasattr(job_type, "job_type"):  # a @job declaration (JobFunction)
        return str(job_type.name)
    if hasattr(job_type, "module_path"):  # a django.tasks Task: its module path names it
        return str(job_type.module_path)
    raise InvalidJobOption(f"Not a job type: {job_type!r} (a name, a @job declaration or a @task).")


def step(
    job_type: Any,
    payload: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    priority: str | None = None,
    delay: float | None = None,
    dedupe_key: str | None = None,
    results_as: str | None = None,
) -> Step:
    """One step: a job of ``job_type`` with ``payload``, enqueued when the steps before it
    succeeded (see ``jobs.step``)."""
    type_name = _type_name(job_type)
    declared = registry.lookup(type_name)
    payload = dict(payload or {})
    text = validation.payload_text(payload)
    key = declared.dedupe_key(payload, validation.dedupe_key(dedupe_key))
    if declared.dedupe is not None:
        key = validation.dedupe_key(key, error=InvalidPayload)
    queue = declared.queue
    stored_priority = validation.priority(priority if priority is not None else declared.priority)
    arguments: Mapping[str, Any] = payload
    if hasattr(job_type, "module_path") and hasattr(job_type, "queue_name"):
        # A django.tasks task: its own queue, and its priority on the stored scale (as the
        # backend enqueues it), unless the step names one.
        queue = job_type.queue_name
        if priority is None:
            stored_priority = -int(job_type.priority)
        arguments = payload.get("kwargs") or {}  # a task's limit keys name its keyword arguments
    concurrency_key, rate_key = validation.limit_keys(declared, arguments)
    return Step(
        type=declared.name,
        queue=queue,
        priority=stored_priority,
        payload=payload,
        payload_text=text,
        dedupe_key=key,
        concurrency_key=concurrency_key,
        rate_key=rate_key,
        max_attempts=declared.attempts,
        name=_step_name(name),
        delay=_delay(delay),
        results_as=_results_as(results_as),
    )


def chain(*parts: Flow) -> Chain:
    """``parts`` one after the other: each starts when the previous one succeeded."""
    return Chain(_flows(parts, "chain"))


def group(members: Iterable[Flow], *, then: Flow | None = None) -> Group:
    """``members`` in parallel; ``then`` (a step, chain or group) when all succeeded."""
    if isinstance(members, Step | Chain | Group):
        raise InvalidJobOption("group() takes a list of steps: group([a, b], then=c).")
    if then is not None and not isinstance(then, Step | Chain | Group):
        raise InvalidJobOption(f"group(then=...) takes a step, chain or group, got {type(then).__name__}.")
    return Group(_flows(tuple(members), "group"), then)


def _flows(parts: Sequence[Any], kind: str) -> tuple[Flow, ...]:
    if not parts:
        raise InvalidJobOption(f"An empty {kind}: give it at least one step.")
    for part in parts:
        if not isinstance(part, Step | Chain | Group):
            raise InvalidJobOption(
                f"A {kind} holds steps, chains and groups (jobs.step(...)), got {type(part).__name__}."
            )
    return tuple(parts)


def _step_name(name: object) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_LENGTH:
        raise InvalidJobOption(f"A step's name is text of 1 to {NAME_LENGTH} characters, got {name!r:.60}.")
    validation.dedupe_key(name)  # no NUL, no lone surrogate: the column is text as a key's
    return name


def _delay(delay: object) -> float | None:
    if delay is None:
        return None
    longest = jobs_settings.MAX_RUN_AT_DAYS * SECONDS_PER_DAY
    if isinstance(delay, bool) or not isinstance(delay, int | float) or not math.isfinite(delay):
        raise InvalidJobOption(f"A step's delay is a number of seconds, got {delay!r:.60}.")
    if not 0 <= delay <= longest:
        raise InvalidJobOption(
            f"A step's delay is 0 to {longest:g} seconds (JOBS_MAX_RUN_AT_DAYS), got {delay:g}."
        )
    return float(delay)


def _results_as(keyword: object) -> str:
    if keyword is None:
        return ""
    if not isinstance(keyword, str) or not keyword.isidentifier() or len(keyword) > 50:
        raise InvalidJobOption(f"results_as names a keyword argument, got {keyword!r:.60}.")
    return keyword


# --- the plan -----------------------------------------------------------------------------


@dataclass
class PlannedStep:
    step: Step
    name: str = ""
    depth: int = 0
    pending: int = 0


@dataclass
class Plan:
    """A flow laid out: its steps in order (every step after the ones it waits for), the
    edges between them as (upstream, downstream) indexes, its first and last steps."""

    steps: list[PlannedStep] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    sinks: list[int] = field(default_factory=list)

    @property
    def depth(self) -> int:
        """How many columns its graph has."""
        return 1 + max((planned.depth for planned in self.steps), default=-1)


def plan(flow: Flow, *, taken: Iterable[str] = (), max_steps: int | None = None) -> Plan:
    """Lay ``flow`` out. Default names avoid ``taken`` (none when adding to a running
    workflow: a name given again means the same step); at most ``max_steps`` steps."""
    if not isinstance(flow, Step | Chain | Group):
        raise InvalidJobOption(f"Start a step, chain or group (jobs.step(...)), got {type(flow).__name__}.")
    limit = jobs_settings.WORKFLOW_MAX_STEPS if max_steps is None else max_steps
    laid = Plan()
    laid.sources, laid.sinks = _lay(flow, laid, 0, limit)
    _name(laid, set(taken))
    incoming: list[list[int]] = [[] for _ in laid.steps]
    for upstream, downstream in laid.edges:
        incoming[downstream].append(upstream)
    for index, planned in enumerate(laid.steps):  # upstream steps come first: one pass
        ups = incoming[index]
        planned.pending = len(ups)
        planned.depth = 1 + max((laid.steps[up].depth for up in ups), default=-1)
    return laid


def _lay(flow: Flow, laid: Plan, nesting: int, limit: int) -> tuple[list[int], list[int]]:
    """Append ``flow``'s steps and edges; its first steps and its last ones."""
    if nesting > MAX_NESTING:
        raise InvalidJobOption(f"Chains and groups nest at most {MAX_NESTING} deep.")
    if isinstance(flow, Step):
        if len(laid.steps) >= limit:
            raise InvalidJobOption(f"A workflow holds at most {limit:,} steps (JOBS_WORKFLOW_MAX_STEPS).")
        laid.steps.append(PlannedStep(flow))
        index = len(laid.steps) - 1
        return [index], [index]
    if isinstance(flow, Chain):
        sources: list[int] = []
        sinks: list[int] = []
        for number, part in enumerate(flow.parts):
            first, last = _lay(part, laid, nesting + 1, limit)
            if number == 0:
                sources = first
            else:
                _join(laid, sinks, first, limit)
            sinks = last
        return sources, sinks
    sources, sinks = [], []
    for member in flow.members:
        first, last = _lay(member, laid, nesting + 1, limit)
        sources += first
        sinks += last
    if flow.then is None:
        return sources, sinks
    first, last = _lay(flow.then, laid, nesting + 1, limit)
    _join(laid, sinks, first, limit)
    return sources, last


def _join(laid: Plan, upstream: list[int], downstream: list[int], limit: int) -> None:
    """Every step of ``downstream`` waits for every step of ``upstream``."""
    if len(laid.edges) + len(upstream) * len(downstream) > EDGES_PER_STEP * limit:
        raise InvalidJobOption(
            f"A workflow holds at most {EDGES_PER_STEP * limit:,} edges: a group followed by a group "
            "joins every step of the one to every step of the other; put a step between them."
        )
    laid.edges.extend(itertools.product(upstream, downstream))


def _name(laid: Plan, taken: set[str]) -> None:
    """The names given, each once; every other step its default name, numbered
    (``name#2``, ``name#3``) where it repeats, avoiding ``taken`` and the given ones."""
    given: set[str] = set()
    for planned in laid.steps:
        name = planned.step.name
        if name is None:
            continue
        if name in given:
            raise InvalidJobOption(f"Two steps are named {name!r}: a step's name is its own.")
        given.add(name)
        planned.name = name
    used = taken | given
    counts: dict[str, int] = {}
    for planned in laid.steps:
        if planned.name:
            continue
        base = planned.step.default_name[: NAME_LENGTH - 8]
        number = counts.get(base, 0)
        while True:
            number += 1
            candidate = base if number == 1 else f"{base}#{number}"
            if candidate not in used:
                break
        counts[base] = number
        used.add(candidate)
        planned.name = candidate
