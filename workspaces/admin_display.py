"""How the workspace admin shows what the jobs recorded: tables, not raw JSON.

Findings are a table whose secret-like rows (a committed key or environment file) stand
out; languages a table of files per language; paths a bounded list; a decision's evidence
its quotes with where each was found. Every value comes from a repository or a provider,
so all of it is escaped.
"""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

#: A finding whose rule starts with this is a secret in the repository: it stands out.
SECRET_RULES = "secrets."
#: Paths and findings listed on a page; the rest are counted.
ROWS_SHOWN = 200


def findings_table(findings: Any) -> SafeString | str:
    rows = [item for item in findings if isinstance(item, dict)] if isinstance(findings, list) else []
    if not rows:
        return "None"
    secrets = sum(1 for row in rows if str(row.get("rule", "")).startswith(SECRET_RULES))
    return format_html(
        '{}<table class="ws-table ws-findings"><thead><tr><th>rule</th><th>path</th><th>finding</th>'
        "</tr></thead><tbody>{}</tbody></table>{}",
        format_html(
            '<p class="ws-secret-note">{} secret-like finding{}: review them first.</p>',
            secrets,
            "s" * (secrets != 1),
        )
        if secrets
        else "",
        format_html_join(
            "",
            '<tr class="{}"><td class="ws-rule">{}</td><td class="ws-path">{}</td><td>{}</td></tr>',
            (
                (
                    "ws-secret" if str(row.get("rule", "")).startswith(SECRET_RULES) else "",
                    row.get("rule", ""),
                    row.get("path", "") or "—",
                    row.get("message", ""),
                )
                for row in _secrets_first(rows)[:ROWS_SHOWN]
            ),
        ),
        _more(len(rows) - ROWS_SHOWN, "findings"),
    )


def _secrets_first(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda row: not str(row.get("rule", "")).startswith(SECRET_RULES))


def languages_table(languages: Any) -> SafeString | str:
    if not isinstance(languages, dict) or not languages:
        return "None"
    ordered = sorted(languages.items(), key=lambda item: (-_number(item[1]), str(item[0])))
    return format_html(
        '<table class="ws-table ws-languages"><thead><tr><th>language</th><th>files</th></tr></thead>'
        "<tbody>{}</tbody></table>",
        format_html_join("", "<tr><td>{}</td><td>{}</td></tr>", ordered),
    )


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def paths_list(paths: Any) -> SafeString | str:
    if not isinstance(paths, list) or not paths:
        return "None"
    return format_html(
        '<ul class="ws-paths">{}</ul>{}',
        format_html_join("", "<li>{}</li>", ((path,) for path in paths[:ROWS_SHOWN])),
        _more(len(paths) - ROWS_SHOWN, "paths"),
    )


def evidence_table(evidence: Any) -> SafeString | str:
    rows = [item for item in evidence if isinstance(item, dict)] if isinstance(evidence, list) else []
    if not rows:
        return "None"
    return format_html(
        '<table class="ws-table"><thead><tr><th>found in</th><th>statement</th></tr></thead><tbody>{}</tbody></table>',
        format_html_join(
            "",
            '<tr><td class="ws-rule">{}</td><td>{}</td></tr>',
            ((row.get("source", ""), row.get("quote", "")) for row in rows),
        ),
    )


def json_block(value: Any) -> SafeString | str:
    """Structured data no table fits (the code host's cursors, an architecture summary)."""
    if not value:
        return "None"
    return format_html(
        '<pre class="ws-pre">{}</pre>', json.dumps(value, indent=2, sort_keys=True, default=str)
    )


def text_block(text: str) -> SafeString | str:
    return format_html('<pre class="ws-pre">{}</pre>', text) if text else "—"


def _more(count: int, what: str) -> SafeString | str:
    return format_html('<p class="ws-more">… and {} more {}.</p>', f"{count:,}", what) if count > 0 else ""
