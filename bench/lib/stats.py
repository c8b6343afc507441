"""How the benchmarks summarise repeated runs."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank, no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def summary(values: Sequence[float], unit: str, digits: int = 0) -> str:
    """``median unit (min …, max …, n=…)``: every figure is quoted with its spread."""
    median = statistics.median(values)
    return (
        f"{median:,.{digits}f} {unit} "
        f"(min {min(values):,.{digits}f}, max {max(values):,.{digits}f}, n={len(values)})"
    )


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median of the ratios of runs taken side by side (``numerators[i]`` right after
    ``denominators[i]``): what the machine did during a pair touches both of its runs alike,
    where a ratio of medians can set a run of one mode of the machine against a run of another."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))
