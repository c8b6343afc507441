"""Target tracking as Application Auto Scaling applies it to an ECS service, on a clock of
our own: the controller of the fleet simulation (bench/fleet.py).

desired = ceil(current × metric ÷ target), within [min, max]. As in AWS, the policy acts
through two alarms on the metric: scale out once it has been above the target for
``out_datapoints`` evaluations in a row (3 one-minute data points in AWS), scale in once it
has been below 90 % of the target for ``in_datapoints`` (15); a scale-out waits for the
scale-out cooldown since the last scale-out, a scale-in for the scale-in cooldown since the
last scaling activity of either kind. ``current`` is the service's desired count, as in AWS
(not the tasks already running). The defaults are deploy/worker-service.yaml's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCALE_IN_THRESHOLD = 0.9  # target tracking's scale-in alarm sits a little below the target


@dataclass
class TargetTracking:
    target: float = 40.0
    min_tasks: int = 1
    max_tasks: int = 20
    scale_out_cooldown: float = 60.0  # seconds, on the controller's clock
    scale_in_cooldown: float = 300.0
    out_datapoints: int = 3
    in_datapoints: int = 15
    _above: int = 0
    _below: int = 0
    _last_out: float = -math.inf
    _last_activity: float = -math.inf

    def evaluate(self, current: int, metric: float, now: float) -> int:
        """The new desired count after one evaluation of ``metric`` at ``now``."""
        self._above = self._above + 1 if metric > self.target else 0
        self._below = self._below + 1 if metric < self.target * SCALE_IN_THRESHOLD else 0
        wanted = self.clamp(math.ceil(max(current, 1) * metric / self.target))
        if (
            wanted > current
            and self._above >= self.out_datapoints
            and now - self._last_out >= self.scale_out_cooldown
        ):
            self._last_out = self._last_activity = now
            return wanted
        if (
            wanted < current
            and self._below >= self.in_datapoints
            and now - self._last_activity >= self.scale_in_cooldown
        ):
            self._last_activity = now
            return wanted
        return self.clamp(current)

    def clamp(self, tasks: int) -> int:
        return max(self.min_tasks, min(self.max_tasks, tasks))
