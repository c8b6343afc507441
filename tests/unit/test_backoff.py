"""The backoff schedule of ``JobType.delay_after``: the declared steps, the extrapolation
past them, and the cap, and the schedules of declared types. No database."""

from __future__ import annotations

import pytest

from jobs import registry
from jobs.registry import JobType


def _type(**options) -> JobType:
    return JobType(name="unit.backoff", func=lambda ctx: None, **options)


@pytest.mark.parametrize(
    "attempt, delay",
    [(1, 30), (2, 120), (3, 480), (4, 1800), (5, 1800), (20, 1800)],
)
def test_backoff__default_schedule_is_30_120_480_capped_at_1800(attempt, delay):
    assert _type().delay_after(attempt) == delay


def test_backoff__extrapolates_by_the_schedules_own_ratio_below_the_cap():
    uncapped = _type(backoff_cap=100_000)
    assert [uncapped.delay_after(n) for n in range(1, 7)] == [30, 120, 480, 1920, 7680, 30720]
    assert uncapped.delay_after(8) == 100_000


def test_backoff__email_schedule_is_30_120_600():
    email = registry.get("email.process")  # as the pipeline declares it (000_…, 003_…)
    assert (email.queue, email.attempts) == ("mail", 3)
    assert [email.delay_after(n) for n in (1, 2, 3)] == [30, 120, 600]
    assert email.delay_after(4) == 1800  # 600 × 5 = 3000, capped


def test_backoff__single_step_doubles():
    single = _type(backoff=(10,), backoff_cap=1000)
    assert [single.delay_after(n) for n in range(1, 5)] == [10, 20, 40, 80]


def test_backoff__flat_and_zero_schedules():
    assert [_type(backoff=(5, 5)).delay_after(n) for n in range(1, 5)] == [5, 5, 5, 5]
    assert [_type(backoff=(0, 0)).delay_after(n) for n in range(1, 4)] == [0, 0, 0]


def test_backoff__a_step_above_the_cap_is_capped():
    assert _type(backoff=(3600,), backoff_cap=1800).delay_after(1) == 1800


def test_backoff__declared_test_type_uses_the_exact_schedule():
    declared = registry.get("test.fail")
    assert [declared.delay_after(n) for n in (1, 2, 3, 4)] == [30, 120, 480, 1800]
    assert all(isinstance(declared.delay_after(n), float) for n in (1, 4))
