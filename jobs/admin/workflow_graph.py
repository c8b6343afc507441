"""A workflow's steps as a graph, drawn on the server as one SVG: no script, nothing fetched.

Steps stand in columns by their ``depth`` (every step right of the steps it waits for),
top to bottom in their order. A column shows its first ``PER_COLUMN`` steps and one box
for the rest, with their statuses counted; a workflow of more than ``MAX_COLUMNS`` columns
shows its first and last ones and one gap between. So the page reads a bounded number of
rows whatever the workflow's size: the columns' counts (one aggregate), the shown steps
(one query, a window over each column), their jobs and the edges that touch them.

Each box is a step: its number and name, its status (its job's while it has one: queued,
running, retrying), its attempts, and a link to its job; its title holds its message.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Case, Count, OuterRef, Subquery, Value, When
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from jobs.models import Job, Status, Workflow, WorkflowEdge, WorkflowStep

STEP = WorkflowStep.Status
PER_COLUMN = 20
MAX_COLUMNS = 16
FIRST_COLUMNS, LAST_COLUMNS = 11, 4  # and the gap between them: 16 columns drawn
NODE_W, NODE_H = 220, 50
GAP_X, GAP_Y = 56, 12
PAD = 8
NAME_CHARS = 30


@dataclass
class Box:
    """A step, a column's hidden steps (``more``), or the gap of hidden columns."""

    x: int
    y: int
    status: str
    title: str
    line1: str
    line2: str
    url: str = ""
    step_id: int | None = None
    kind: str = "step"


@dataclass
class Graph:
    boxes: list[Box] = field(default_factory=list)
    edges: list[tuple[Box, Box]] = field(default_factory=list)
    width: int = 0
    height: int = 0
    steps_shown: int = 0


def _shown_status(step: dict[str, Any], job: Mapping[str, Any] | None) -> str:
    if step["status"] != STEP.RELEASED:
        return str(step["status"])
    if job is None:
        return "blocked"  # released while an active job held its dedupe key
    if job["status"] == Status.QUEUED and job["attempts"] > 0:
        return "retrying"
    return str(job["status"])


def _cut(text: str, length: int = NAME_CHARS) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def build(workflow: Workflow) -> Graph:
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    for depth, status, number in (
        WorkflowStep.objects.filter(workflow_id=workflow.pk)
        .values_list("depth", "status")
        .annotate(number=Count("id"))
        .order_by()
    ):
        counts[depth][status] += number
    depths = sorted(counts)
    gap_after: int | None = None
    skipped: list[int] = []
    if len(depths) > MAX_COLUMNS:
        gap_after = depths[FIRST_COLUMNS - 1]
        skipped = depths[FIRST_COLUMNS:-LAST_COLUMNS]
        depths = depths[:FIRST_COLUMNS] + depths[-LAST_COLUMNS:]
    steps = _first_of_columns(workflow.pk, depths)
    ids = [step["id"] for step in steps]
    jobs = {
        job["step_id"]: job
        for job in Job.objects.filter(step_id__in=ids).values(
            "id", "step_id", "status", "attempts", "max_attempts"
        )
    }
    graph = Graph(steps_shown=len(steps))
    # The gap of hidden columns takes a column of its own.
    column_of = {
        depth: index + (1 if gap_after is not None and depth > gap_after else 0)
        for index, depth in enumerate(depths)
    }
    by_column: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for step in steps:
        by_column[step["depth"]].append(step)
    job_url = reverse("admin:platform_job_change", args=[0]).replace("/0/", "/{}/")  # once, not per box
    box_of: dict[int, Box] = {}
    more_of: dict[int, Box] = {}
    tallest = 0
    for depth in depths:
        x = PAD + column_of[depth] * (NODE_W + GAP_X)
        column = by_column[depth]
        for row, step in enumerate(column):
            job = jobs.get(step["id"])
            status = _shown_status(step, job)
            if job is not None:
                attempts = f"try {job['attempts']}/{job['max_attempts']}"
            elif step["status"] == STEP.WAITING:
                attempts = f"waits for {step['pending']:,}"
            else:
                attempts = "no job"
            box = Box(
                x=x,
                y=PAD + row * (NODE_H + GAP_Y),
                status=status,
                title=f"#{step['position']} {step['name']} ({step['type']}): {status}"
                + (f". {step['message']}" if step["message"] else ""),
                line1=f"#{step['position']} {_cut(step['name'])}",
                line2=f"{status} · {attempts}",
                url=job_url.format(job["id"]) if job else "",
                step_id=step["id"],
            )
            box_of[step["id"]] = box
            graph.boxes.append(box)
        hidden = sum(counts[depth].values()) - len(column)
        rows = len(column)
        if hidden > 0:
            said = ", ".join(f"{number:,} {status}" for status, number in counts[depth].most_common())
            more = Box(
                x=x,
                y=PAD + rows * (NODE_H + GAP_Y),
                status="more",
                title=f"Column {depth + 1}: {sum(counts[depth].values()):,} steps ({said})",
                line1=f"+ {hidden:,} more steps",
                line2=_cut(f"column: {said}", 36),
                kind="more",
            )
            more_of[depth] = more
            graph.boxes.append(more)
            rows += 1
        tallest = max(tallest, rows)
    if gap_after is not None:
        total = sum(sum(counts[depth].values()) for depth in skipped)
        graph.boxes.append(
            Box(
                x=PAD + FIRST_COLUMNS * (NODE_W + GAP_X),
                y=PAD,
                status="more",
                title=f"{len(skipped):,} columns not shown ({total:,} steps)",
                line1=f"… {len(skipped):,} more columns",
                line2=f"{total:,} steps",
                kind="gap",
            )
        )
    _connect(graph, steps, box_of, more_of)
    columns = len(depths) + (1 if gap_after is not None else 0)
    graph.width = 2 * PAD + columns * NODE_W + max(columns - 1, 0) * GAP_X
    graph.height = 2 * PAD + tallest * NODE_H + max(tallest - 1, 0) * GAP_Y
    return graph


def _first_of_columns(workflow_id: int, depths: list[int]) -> list[dict[str, Any]]:
    """The first ``PER_COLUMN`` steps of each column: one range of the index
    ``jobs_workflow_step_graph`` (workflow, depth, position) per column, all in one
    statement where the database takes a UNION of ordered, limited parts."""
    fields = ("id", "position", "name", "type", "status", "pending", "depth", "message")
    parts = [
        WorkflowStep.objects.filter(workflow_id=workflow_id, depth=depth)
        .order_by("position")
        .values(*fields)[:PER_COLUMN]
        for depth in depths
    ]
    if not parts:
        return []
    if connection.features.supports_slicing_ordering_in_compound and len(parts) > 1:
        return list(parts[0].union(*parts[1:], all=True).order_by("depth", "position"))
    return [row for part in parts for row in part]  # SQLite: one statement per column


def _connect(
    graph: Graph,
    steps: list[dict[str, Any]],
    box_of: dict[int, Box],
    more_of: dict[int, Box],
) -> None:
    """The edges between shown steps, and those between a shown step and a column's hidden
    steps (drawn to that column's box). A column's hidden steps are those after its last
    shown one, so whether a shown step has an edge to or from them is an EXISTS that stops
    at the first such edge: a callback after 10,000 members costs what one after 30 does."""
    ids = [step["id"] for step in steps]
    if not ids:
        return
    edges = WorkflowEdge.objects.all()
    for up, down in edges.filter(upstream_id__in=ids, downstream_id__in=ids).values_list(
        "upstream_id", "downstream_id"
    ):
        graph.edges.append((box_of[up], box_of[down]))
    if not more_of:
        return
    last_shown: dict[int, int] = {}
    for step in steps:
        last_shown[step["depth"]] = max(last_shown.get(step["depth"], 0), step["position"])

    # Each subquery walks the shown step's own edges (the primary key from upstream, the
    # index on downstream) and stops at the first that reaches a hidden step, one after its
    # column's last shown one: two subqueries a step, whatever the number of columns. The
    # depth compared with the shown step's is true of every edge; it keeps PostgreSQL from
    # hashing the subquery over every edge of the workflow instead. A step linked to hidden
    # steps of two columns on one side is drawn linked to the first column found.
    def hidden(side: str) -> Case:
        last = [When(**{f"{side}__depth": depth}, then=Value(last_shown.get(depth, 0))) for depth in more_of]
        return Case(*last, default=Value(2**31 - 1))

    first_hidden_upstream = Subquery(
        edges.filter(
            downstream_id=OuterRef("pk"),
            upstream__depth__lt=OuterRef("depth"),
            upstream__position__gt=hidden("upstream"),
        ).values("upstream__depth")[:1]
    )
    first_hidden_downstream = Subquery(
        edges.filter(
            upstream_id=OuterRef("pk"),
            downstream__depth__gt=OuterRef("depth"),
            downstream__position__gt=hidden("downstream"),
        ).values("downstream__depth")[:1]
    )
    rows = (
        WorkflowStep.objects.filter(pk__in=ids)
        .annotate(up=first_hidden_upstream, down=first_hidden_downstream)
        .order_by()
        .values_list("id", "up", "down")
    )
    for step_id, up, down in rows:
        if up in more_of:
            graph.edges.append((more_of[up], box_of[step_id]))
        if down in more_of:
            graph.edges.append((box_of[step_id], more_of[down]))


def svg(graph: Graph) -> SafeString:
    """The graph as SVG markup (every text escaped)."""
    if not graph.boxes:
        return mark_safe('<p class="workflow-empty">No steps.</p>')  # noqa: S308 - constant text
    parts = [
        f'<svg class="workflow-graph" xmlns="http://www.w3.org/2000/svg" width="{graph.width}" '
        f'height="{graph.height}" viewBox="0 0 {graph.width} {graph.height}" role="img" '
        f'aria-label="The workflow\'s steps as a graph">'
    ]
    for up, down in graph.edges:
        x1, y1 = up.x + NODE_W, up.y + NODE_H // 2
        x2, y2 = down.x, down.y + NODE_H // 2
        bend = GAP_X // 2
        parts.append(
            f'<path class="workflow-edge" d="M{x1} {y1} C{x1 + bend} {y1} {x2 - bend} {y2} {x2} {y2}"/>'
        )
    for box in graph.boxes:
        inner = (
            f"<title>{escape(box.title)}</title>"
            f'<rect class="workflow-box" x="{box.x}" y="{box.y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<rect class="workflow-mark" x="{box.x}" y="{box.y}" width="6" height="{NODE_H}" rx="3"/>'
            f'<text x="{box.x + 14}" y="{box.y + 20}" class="workflow-name">{escape(box.line1)}</text>'
            f'<text x="{box.x + 14}" y="{box.y + 38}" class="workflow-detail">{escape(box.line2)}</text>'
        )
        data = f' data-step="{box.step_id}"' if box.step_id is not None else ""
        group = f'<g class="workflow-{box.kind} workflow-status--{escape(box.status)}"{data}>{inner}</g>'
        parts.append(f'<a href="{escape(box.url)}">{group}</a>' if box.url else group)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped or a number
