"""Leases (``jobs.flow.leases``): what admission hands a worker of a type far from its
limits, and how every later claim that counts holds the lease against the limits."""

from __future__ import annotations

from jobs.drivers.protocol import Candidate
from jobs.flow import leases
from jobs.flow.admission import Rules, admit
from jobs.flow.limits import TypeLimits
from jobs.flow.queues import QueueLimits
from jobs.flow.rates import Rate, Window, with_pending

S = 1_000_000
LIMITS = {
    "wide": TypeLimits.declare("wide", concurrency=10_000, rate="10000/s"),
    "capped": TypeLimits.declare("capped", concurrency=40),
    "keyed": TypeLimits.declare("keyed", concurrency=10_000, concurrency_key="k:{id}"),
}
RULES = Rules(queues={}, type_limits=LIMITS.get)


def _jobs(type_name: str, count: int, queue: str = "q", key: str | None = None) -> list[Candidate]:
    concurrency, rate = LIMITS[type_name].keys(type_name, {"id": key})
    return [Candidate(n, type_name, queue, concurrency, rate) for n in range(1, count + 1)]


def test_window__keeps_its_leases_beside_its_starts_and_stores_each_apart():
    window = Window([(5, 2)], [(9 * S, 64, "w1")])
    text = with_pending(window.dump(), 7, 3, window.dump_leases())
    loaded = Window.load(text)
    assert loaded.starts == [(5, 2), (7, 3)] and loaded.leases == [(9 * S, 64, "w1")]
    assert Window.load(loaded.dump()).leases == []  # ``recent`` holds the starts only
    assert with_pending("[]", None, None, "not json") == "[]"  # a garbled row: no lease, not no claim


def test_admit__hands_a_lease_far_from_the_limits_and_records_its_starts_after_its_end():
    decided = admit(
        _jobs("wide", 8), 8, 0, RULES, {}, {}, {}, reckon=["type:wide"], lease_to="w1", lease_most=256
    )
    lease = decided.leases["type:wide"]
    assert (lease.jobs, lease.until, lease.now) == (256, leases.LENGTH, 0)
    gate = decided.gates["type:wide"]
    window = Window.load(with_pending(gate.recent, None, None, gate.leases or ""))
    assert window.leases == [(leases.LENGTH, 256, "w1")]
    assert window.used(leases.LENGTH + leases.RATE_MARGIN + S - 1, Rate(10_000, 1)) == 256  # still held then
    assert gate.spare_slots == 10_000 // 2 - 8 - 256  # the lease counts as running
    assert gate.spare_starts == 10_000 - 8 - 256


def test_admit__a_lease_in_force_counts_as_running_until_its_grace_ends():
    window = Window([], [(S, 30, "other")])
    held = admit(_jobs("capped", 20), 20, 0, RULES, {"type:capped": 5}, {}, {"type:capped": window})
    assert len(held.admitted) == 40 - 5 - 30
    assert held.full_keys == {"type:capped"}
    late = S + leases.GRACE  # the lease no longer counts
    ended = admit(
        _jobs("capped", 20),
        20,
        late,
        RULES,
        {"type:capped": 5},
        {},
        {"type:capped": Window([], [(S, 30, "other")])},
    )
    assert len(ended.admitted) == 20


def test_admit__ends_the_claimers_own_lease_and_leaves_anothers():
    window = Window([], [(S, 100, "w1"), (S, 50, "w2")])
    decided = admit(
        _jobs("capped", 1),
        1,
        0,
        RULES,
        {},
        {},
        {"type:capped": window},
        reckon=["type:capped"],
        lease_to="w1",
        lease_most=256,
    )
    assert decided.leases == {"type:capped": None}  # ended, and 40 leaves no room for another
    assert Window.load(with_pending("[]", None, None, decided.gates["type:capped"].leases or "")).leases == [
        (S, 50, "w2")
    ]


def test_admit__hands_no_lease_near_a_limit_nor_of_a_per_key_type_nor_in_a_queue_with_limits():
    near = admit(
        _jobs("capped", 2), 2, 0, RULES, {}, {}, {}, reckon=["type:capped"], lease_to="w1", lease_most=256
    )
    assert not near.leases  # (40 // 2) // SHARE = 5 jobs: not worth a lease
    assert admit(
        _jobs("capped", 2), 2, 0, RULES, {}, {}, {}, reckon=["type:capped"], lease_to="w1", lease_most=4
    ).leases
    keyed = admit(
        _jobs("keyed", 2, key="a"),
        2,
        0,
        RULES,
        {},
        {},
        {},
        reckon=["type:keyed"],
        lease_to="w1",
        lease_most=256,
    )
    assert not keyed.leases
    limited = Rules(queues={"q": QueueLimits("q", concurrency=100_000)}, type_limits=LIMITS.get)
    in_limited = admit(
        _jobs("wide", 2),
        2,
        0,
        limited,
        {},
        {},
        {},
        reckon=["type:wide", "queue:q"],
        lease_to="w1",
        lease_most=256,
    )
    assert not in_limited.leases


def test_lease_size__a_share_of_what_the_spare_allows():
    limits = leases.GateLimits(concurrency=1_000, rate=Rate(400, 1))
    assert leases.size(limits, 100, Window(), 0, 4096) == 100  # the rate's room, 400 // 4
    assert leases.size(limits, 100, Window([(0, 300)]), 0, 4096) == 0  # 25, under LEAST: none worth it
    assert leases.size(limits, 100, Window([(0, 300)]), 0, 25) == 25  # unless the worker asks no more
    assert leases.size(limits, 100, Window(), 0, 0) == 0


def test_grant__drops_the_leases_that_no_longer_count_whoever_held_them():
    window = Window([], [(S, 10, "gone"), (5 * S, 10, "other")])
    lease = leases.grant(window, leases.GateLimits(concurrency=100_000), "w1", 64, S + leases.GRACE)
    assert window.leases == [(5 * S, 10, "other"), (lease.until, 64, "w1")]
