"""Draw the sequence diagram of the Internals page: one job from enqueue through claim,
child, completion and reaping, as a self-contained SVG (no script, no web font).

    python scripts/draw_job_sequence.py > docs/img/job-sequence.svg

The steps are listed below as data; edit them there when the job's path changes.
"""

from __future__ import annotations

import sys
from html import escape

LANES = ("Producer", "Database", "Supervisor", "Child", "Reaper")
X = {name: 85 + i * 157 for i, name in enumerate(LANES)}
WIDTH = X[LANES[-1]] + 85
CHAR = 7.3  # the width of a character of the labels, near enough, to keep them inside
ROW = 42
TOP = 78

# ("msg", from, to, label, dashed) | ("self", lane, label) | ("band", label)
STEPS: list[tuple] = [
    ("msg", "Producer", "Database", "INSERT (queued), in the caller's transaction", False),
    ("msg", "Producer", "Database", "COMMIT: the job is visible", False),
    ("msg", "Database", "Supervisor", "NOTIFY on PostgreSQL (others: the next poll)", True),
    ("msg", "Supervisor", "Database", "claim: SKIP LOCKED, in claim order", False),
    ("self", "Database", "running, attempt + 1, locked by this worker"),
    ("msg", "Supervisor", "Child", "the job (a batch of very short ones)", False),
    ("self", "Child", "run the handler"),
    ("msg", "Child", "Supervisor", "progress, through shared memory", True),
    ("msg", "Supervisor", "Database", "heartbeat; the latest progress", False),
    ("msg", "Child", "Supervisor", "returned / failed / RetryLater", True),
    ("msg", "Supervisor", "Database", "complete, fenced by worker and attempt (batched)", False),
    ("self", "Database", "succeeded, or queued after backoff, or failed"),
    ("band", "if the worker goes silent instead"),
    ("self", "Reaper", "silent: heartbeat or worker lease too old"),
    ("msg", "Reaper", "Database", "take back: queued after backoff (the try counts)", False),
    ("msg", "Supervisor", "Database", "a late completion: the fence matches no row", True),
    ("self", "Database", "dropped (an atomic job's writes roll back)"),
]

STYLE = """
  text { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; fill: #1f2937; }
  .lane { font-size: 16px; font-weight: 600; text-anchor: middle; }
  .label { font-size: 14px; text-anchor: middle; paint-order: stroke; stroke: #ffffff; stroke-width: 5px; }
  .note { font-size: 14px; text-anchor: middle; }
  .band { font-size: 14px; font-style: italic; fill: #6b7280; paint-order: stroke; stroke: #ffffff; stroke-width: 5px; }
  .head { fill: #eef2ff; stroke: #4f46e5; stroke-width: 1.2; }
  .life { stroke: #9ca3af; stroke-width: 1; stroke-dasharray: 4 4; }
  .arrow { stroke: #1f2937; stroke-width: 1.3; fill: none; marker-end: url(#tip); }
  .dashed { stroke-dasharray: 6 4; }
  .box { fill: #fef9c3; stroke: #ca8a04; stroke-width: 1; }
  .sep { stroke: #9ca3af; stroke-width: 1; stroke-dasharray: 2 3; }
"""


def draw() -> str:
    height = TOP + ROW * (len(STEPS) + 1) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="title">',
        '<title id="title">One job\'s path: enqueue, claim, child, completion and reaping</title>',
        f"<style>{STYLE}</style>",
        '<defs><marker id="tip" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1f2937"/></marker></defs>',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    for name, x in X.items():
        parts.append(f'<rect class="head" x="{x - 65}" y="14" width="130" height="34" rx="6"/>')
        parts.append(f'<text class="lane" x="{x}" y="36">{name}</text>')
        parts.append(f'<line class="life" x1="{x}" y1="48" x2="{x}" y2="{height - 12}"/>')
    y = TOP
    for step in STEPS:
        y += ROW
        kind = step[0]
        if kind == "msg":
            _, source, target, label, dashed = step
            x1, x2 = X[source], X[target]
            shift = 6 if x2 > x1 else -6
            css = "arrow dashed" if dashed else "arrow"
            parts.append(f'<line class="{css}" x1="{x1 + shift}" y1="{y}" x2="{x2 - shift}" y2="{y}"/>')
            middle = _inside((x1 + x2) / 2, CHAR * len(label))
            parts.append(f'<text class="label" x="{middle}" y="{y - 7}">{escape(label)}</text>')
        elif kind == "self":
            _, lane, label = step
            width = CHAR * len(label) + 24
            middle = _inside(X[lane], width)
            parts.append(
                f'<rect class="box" x="{middle - width / 2}" y="{y - 16}" width="{width}" height="24" rx="4"/>'
            )
            parts.append(f'<text class="note" x="{middle}" y="{y}">{escape(label)}</text>')
        else:
            _, label = step
            parts.append(f'<line class="sep" x1="16" y1="{y - 4}" x2="{WIDTH - 16}" y2="{y - 4}"/>')
            parts.append(f'<text class="band" x="20" y="{y + 12}">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _inside(middle: float, width: float) -> float:
    """The centre of something ``width`` wide near ``middle``, kept inside the picture."""
    return min(max(middle, 8 + width / 2), WIDTH - 8 - width / 2)


if __name__ == "__main__":
    sys.stdout.write(draw())
