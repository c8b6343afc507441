"""What a caller asks a model: an instruction, the facts it is about, and the limits.

A prompt is built from recorded data (repository findings, pull requests, work items), one
fact a line, so the same record always gives the same prompt, and the local digest can
quote the facts without a model. Rendering bounds the prompt: long facts are cut and the
facts that do not fit are counted, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SYSTEM = (
    "You are a senior software engineer writing for colleagues. Use only the facts you are "
    "given, say plainly when they are not enough, and be concise."
)
# One fact never takes more than this share of the prompt.
MAX_FACT_CHARS = 600


@dataclass(frozen=True)
class Prompt:
    """``task`` names the work in logs and in the local digest's title ("test_plan");
    ``json`` asks for a JSON object (the instruction says which shape); a
    ``max_output_tokens`` of None means the MODEL_MAX_OUTPUT_TOKENS setting."""

    task: str
    instruction: str
    facts: tuple[str, ...] = ()
    system: str = DEFAULT_SYSTEM
    json: bool = False
    max_output_tokens: int | None = None

    def render(self, max_chars: int) -> str:
        """The user message: the instruction, then one ``- fact`` a line, within ``max_chars``."""
        instruction = self.instruction[:max_chars]
        lines = [instruction]
        if self.facts:
            lines.append("")
        used = len(instruction) + 1
        for index, fact in enumerate(self.facts):
            line = f"- {one_line(fact)}"
            if used + len(line) + 1 > max_chars:
                lines.append(f"- ({len(self.facts) - index} more facts left out to keep the prompt short)")
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)


def one_line(text: str, limit: int = MAX_FACT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (an ellipsis says it was cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
