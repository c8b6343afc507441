"""The fleet simulation's controller applies target tracking as AWS does: proportional
desired count, alarm data points, separate cooldowns, min and max."""

from __future__ import annotations

from bench.lib.autoscaling import TargetTracking


def _controller(**overrides: float) -> TargetTracking:
    """deploy/worker-service.yaml's policy, on a clock in seconds."""
    settings: dict = {"target": 40.0, "min_tasks": 1, "max_tasks": 20, "scale_out_cooldown": 60.0}
    settings.update({"scale_in_cooldown": 300.0, "out_datapoints": 3, "in_datapoints": 15})
    return TargetTracking(**{**settings, **overrides})


def test_scale_out__desired_is_current_times_metric_over_target_after_three_datapoints():
    controller = _controller()
    assert controller.evaluate(2, 100.0, now=0) == 2
    assert controller.evaluate(2, 100.0, now=60) == 2
    assert controller.evaluate(2, 100.0, now=120) == 5  # ceil(2 × 100 ÷ 40)


def test_scale_out__capped_at_max_tasks_and_waits_out_its_cooldown():
    controller = _controller(out_datapoints=1)
    assert controller.evaluate(1, 10_000.0, now=0) == 20
    assert controller.evaluate(20, 10_000.0, now=30) == 20
    assert controller.evaluate(5, 100.0, now=30) == 5  # within the scale-out cooldown
    assert controller.evaluate(5, 100.0, now=60) == 13


def test_scale_in__needs_fifteen_datapoints_below_ninety_percent_and_its_own_cooldown():
    controller = _controller()
    for minute in range(14):
        assert controller.evaluate(10, 0.0, now=minute * 60) == 10
    assert controller.evaluate(10, 0.0, now=14 * 60) == 1  # to min_tasks
    controller = _controller(in_datapoints=1)
    assert controller.evaluate(10, 37.0, now=0) == 10  # above 90 % of the target: no alarm
    assert controller.evaluate(10, 20.0, now=0) == 5
    assert controller.evaluate(5, 4.0, now=200) == 5  # within the scale-in cooldown
    assert controller.evaluate(5, 4.0, now=300) == 1


def test_scale_in__waits_for_its_cooldown_after_a_scale_out():
    controller = _controller(out_datapoints=1, in_datapoints=1)
    assert controller.evaluate(2, 80.0, now=0) == 4
    assert controller.evaluate(4, 0.0, now=120) == 4
    assert controller.evaluate(4, 0.0, now=300) == 1
