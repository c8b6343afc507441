"""Flow control where jobs are claimed, on the real database (PostgreSQL or MariaDB): the
concurrency of a type, of a key and of a queue counted from the rows, sliding-window rates,
jobs over a limit left queued without using an attempt, the jobs behind a full key still
taken, two claimers that cannot both take the last slot, and slots freed by the reaper."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import registry, set_queue_limits, store
from jobs.drivers import driver, postgres
from jobs.drivers.orm import micros, moment
from jobs.drivers.protocol import Leased
from jobs.errors import InvalidPayload
from jobs.flow import admission, leases, queues
from jobs.flow.limits import queue_key
from jobs.flow.rates import Window
from jobs.models import FlowGate, Job, Status
from tests.support.concurrency import in_thread, run_at_once
from tests.support.database import lock_waiters
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _rules() -> admission.Rules:
    limited = {name: found for name, found in queues.current().items() if found.limited}
    return admission.Rules(queues=limited, type_limits=registry.limits_of)


def _claim(worker: str, limit: int = 10, queue: str = "default", **options) -> store.FlowClaim:
    return store.claim_flowed(worker, [queue], limit, _rules(), **options)


def _ids(claim: store.FlowClaim) -> list[int]:
    return [job.id for job in claim.jobs]


def _takes() -> bool:
    """Whether this database's driver takes a roomy round's jobs at once."""
    with driver().flow_transaction() as round_:
        return round_.takes


def _running(type_name: str) -> int:
    return Job.objects.filter(type=type_name, status=Status.RUNNING).count()


# --- enqueue ---------------------------------------------------------------------------------


def test_enqueue__stores_the_limit_keys_its_type_renders():
    keyed = store.enqueue("test.flow_key", {"account": 7})
    typed = store.enqueue("test.flow_type", {})
    rated = store.enqueue("test.flow_rate_key", {"host": "example.org"})
    unkeyed = store.enqueue("test.flow_key", {})  # no account: no per-account limit
    plain = store.enqueue("test.noop", {})
    assert (keyed.concurrency_key, keyed.rate_key) == ("account:7", None)
    assert (typed.concurrency_key, typed.rate_key) == ("type:test.flow_type", None)
    assert (rated.concurrency_key, rated.rate_key) == (None, "host:example.org")
    assert (unkeyed.concurrency_key, plain.concurrency_key, plain.rate_key) == (None, None, None)
    assert store.enqueue_many("test.flow_key", [{"account": 1}, {"account": 2}]) == 2
    assert set(
        Job.objects.filter(concurrency_key__startswith="account:").values_list("concurrency_key", flat=True)
    ) == {
        "account:7",
        "account:1",
        "account:2",
    }


def test_enqueue__a_key_longer_than_its_column_is_refused_before_anything_is_written():
    with pytest.raises(InvalidPayload, match="limit key may be at most 255"):
        store.enqueue("test.flow_rate_key", {"host": "h" * 300})
    assert not Job.objects.exists()


# --- concurrency -----------------------------------------------------------------------------


def test_claim_flowed__holds_a_type_to_its_concurrency_and_leaves_the_rest_queued_without_an_attempt():
    ids = [store.enqueue("test.flow_type", {}).pk for _ in range(5)]
    first = _claim("w1")
    assert _ids(first) == ids[:2]
    second = _claim("w2")
    assert _ids(second) == []
    assert second.refused >= 1 and second.full_keys == {"type:test.flow_type"}
    waiting = Job.objects.filter(pk__in=ids[2:])
    assert {(job.status, job.attempts, job.locked_by) for job in waiting} == {(Status.QUEUED, 0, None)}

    store.complete("w1", [(ids[0], 1)])  # a slot frees when a job ends
    assert _ids(_claim("w2")) == [ids[2]]
    assert _running("test.flow_type") == 2


def test_claim_flowed__a_round_that_took_its_jobs_at_once_and_found_one_without_room_leaves_nothing():
    """A group whose last round had room takes its next jobs as it locks them (where the
    driver can); one of them near or over a limit rolls that round back, and the rule of
    a round step by step decides."""
    first = store.enqueue("test.flow_type", {}).pk
    assert _ids(_claim("w1")) == [first]  # one of two slots: room, the group goes at once next
    later = [store.enqueue("test.flow_type", {}).pk for _ in range(3)]
    with CaptureQueriesContext(connection) as seen:
        second = _claim("w2")
    assert _ids(second) == [later[0]] and [job.held for job in second.jobs] == [True]  # the last slot
    if _takes():
        said = [query["sql"] for query in seen.captured_queries]
        took = next(i for i, sql in enumerate(said) if "clock_timestamp() AS at" in sql)
        assert "ROLLBACK" in said[took + 1 :]
    waiting = Job.objects.filter(pk__in=later[1:])
    assert {(job.status, job.attempts, job.locked_by, job.started_at) for job in waiting} == {
        (Status.QUEUED, 0, None, None)
    }
    assert _running("test.flow_type") == 2


def test_claim_flowed__a_round_with_room_for_every_job_takes_them_at_once_and_counts_their_starts():
    first = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == first
    more = [store.enqueue("test.noop_limited", {}).pk for _ in range(4)]
    with CaptureQueriesContext(connection) as seen:
        assert _ids(_claim("w2")) == more
    if _takes():
        said = [query["sql"] for query in seen.captured_queries]
        assert any("clock_timestamp() AS at" in sql for sql in said) and "ROLLBACK" not in said
    rows = Job.objects.filter(pk__in=more)
    assert {(job.status, job.locked_by, job.attempts) for job in rows} == {(Status.RUNNING, "w2", 1)}
    assert len({job.started_at for job in rows}) == 1  # one moment, the decision's
    window = FlowGate.objects.get(key="type:test.noop_limited").window()
    assert sum(count for _, count in window.starts) == 7


# --- spares: what a type's limits surely still allow ------------------------------------------

LIMITED_GATE = "type:test.noop_limited"  # concurrency 100,000, rate 100,000/s


def _spare(key: str = LIMITED_GATE) -> tuple[int | None, int | None, str]:
    gate = FlowGate.objects.get(key=key)
    return gate.spare_slots, gate.spare_starts, gate.spare_basis


def test_claim_flowed__a_round_that_counts_leaves_the_type_gate_its_spare():
    """Half the concurrency limit less what runs (past half, jobs go alone), and the room
    left in the rate window; for the limits in force, for one rate period."""
    ids = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == ids
    started = Job.objects.get(pk=ids[0]).started_at
    gate = FlowGate.objects.get(key=LIMITED_GATE)
    assert _spare() == (50_000 - 3, 100_000 - 3, "concurrency 100000, rate 100000/s")
    assert 0 < gate.spare_until - micros(started) <= 1_000_000


def test_claim_flowed__within_the_spare_takes_jobs_without_counting_and_spends_it():
    """In one round trip on PostgreSQL (one statement, in a transaction of a round's plan
    settings: its generic plan scanned the table behind a type-wide backlog); on MariaDB in
    one short transaction."""
    first = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == first  # counts, reckons the spare
    counted = FlowGate.objects.get(key=LIMITED_GATE).window()
    aged = micros(timezone.now()) - 5_000_000  # a start five seconds ago: out of every window
    grain = 1_000_000 // 64
    earlier = (micros(timezone.now()) - 3 * grain) // grain * grain  # a claim's pending starts, grains ago
    FlowGate.objects.filter(key=LIMITED_GATE).update(
        recent=Window([(aged, 9), *counted.starts]).dump(), spare_pending_at=earlier, spare_pending=2
    )
    priorities = ["low", "high", "normal", "critical"]
    more = [store.enqueue("test.noop_limited", {}, priority=priority).pk for priority in priorities]
    rules = _rules()
    with CaptureQueriesContext(connection) as seen:
        claimed = store.claim_flowed("w2", ["default"], 10, rules).jobs
    assert [  # in claim order: by priority first
        (job.id, job.type, job.queue, job.attempt, job.max_attempts, json.loads(job.payload))
        for job in claimed
    ] == [
        (job_id, "test.noop_limited", "default", 1, Job.objects.get(pk=job_id).max_attempts, {})
        for job_id in (more[3], more[1], more[2], more[0])
    ]
    said = [query["sql"] for query in seen.captured_queries]
    assert any("spare_slots" in sql for sql in said) and not any(
        "count(*) from jobs_job" in sql.lower() for sql in said
    )
    if connection.vendor == "postgresql":
        assert len(said) == 4  # the statement in a transaction of the round's settings
        assert "BEGIN" in said[0] and postgres.ROUND_SETTINGS_SQL in said[1] and "COMMIT" in said[3]
        assert "spare_slots" in said[2]
    rows = Job.objects.filter(pk__in=more)
    assert {(job.status, job.locked_by, job.attempts) for job in rows} == {(Status.RUNNING, "w2", 1)}
    [started] = {job.started_at for job in rows}
    assert _spare()[:2] == (50_000 - 7, 100_000 - 7)
    window = FlowGate.objects.get(key=LIMITED_GATE).window()
    assert (aged, 9) not in window.starts and (earlier, 2) in window.starts  # moved in, the aged dropped
    assert sum(count for _, count in window.starts) == 3 + 2 + 4
    newest = window.starts[-1][0]  # recorded at the end of its grain, as Window.record does
    assert newest % grain == 0 and 0 <= newest - micros(started) <= grain


def test_claim_flowed__a_queues_spare_counts_every_job_of_it_and_adds_up_the_starts_of_a_grain():
    """A queue's own limits have a spare too; claims within one grain of its rate (an
    hourly rate's: 56 s) add their starts up (on PostgreSQL in the gate's pending pair)."""
    set_queue_limits("limited", concurrency=1000, rate="100000/h")
    gate = queue_key("limited")
    batches = [[store.enqueue("test.limited_queue", {}).pk for _ in range(3)]]
    assert _ids(_claim("w1", queue="limited")) == batches[0]  # counts, reckons the spare
    rules = _rules()
    for size in (4, 5):
        batches.append(batch := [store.enqueue("test.limited_queue", {}).pk for _ in range(size)])
        with CaptureQueriesContext(connection) as seen:
            assert _ids(store.claim_flowed("w2", ["limited"], 10, rules)) == batch
        assert not any("count(*) from jobs_job" in query["sql"].lower() for query in seen.captured_queries)
    assert _spare(gate) == (500 - 12, 100_000 - 12, "concurrency 1000, rate 100000/h")
    window = FlowGate.objects.get(key=gate).window()
    assert sum(count for _, count in window.starts) == 3 + 4 + 5  # each start once, none lost


@pytest.mark.parametrize(
    "spoil",
    [
        {"spare_slots": 2},  # short of the four jobs
        {"spare_starts": 0},
        {"spare_basis": "concurrency 4, rate -"},  # reckoned for other limits
        {"spare_until": 0},  # past its time
    ],
    ids=["slots-short", "starts-short", "other-limits", "past-its-time"],
)
def test_claim_flowed__a_spare_that_does_not_cover_the_jobs_counts_and_reckons_it_anew(spoil):
    first = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == first
    FlowGate.objects.filter(key=LIMITED_GATE).update(**spoil)
    more = [store.enqueue("test.noop_limited", {}).pk for _ in range(4)]
    assert _ids(_claim("w2")) == more  # counted: far from the limits, all taken
    assert _spare() == (50_000 - 7, 100_000 - 7, "concurrency 100000, rate 100000/s")


def test_claim_flowed__a_job_storing_other_keys_than_its_types_is_claimed_by_a_count_that_rekeys_it():
    first = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == first
    older = store.enqueue("test.noop_limited", {}).pk
    Job.objects.filter(pk=older).update(rate_key=None)  # as enqueued before the type had a rate
    assert _ids(_claim("w2")) == [older]
    assert Job.objects.get(pk=older).rate_key == LIMITED_GATE
    assert _spare()[:2] == (50_000 - 4, 100_000 - 4)


def test_claim_flowed__a_failed_try_frees_its_slot_too():
    ids = [store.enqueue("test.flow_type", {}).pk for _ in range(3)]
    assert _ids(_claim("w1")) == ids[:2]
    store.fail("w1", ids[0], 1, store.Failure("RuntimeError", "boom"))  # retried after 0.2 s
    assert _ids(_claim("w1")) == [ids[2]]


def test_claim_flowed__a_key_at_its_limit_does_not_hold_up_the_other_keys():
    one = [store.enqueue("test.flow_key", {"account": 1}).pk for _ in range(3)]
    two = [store.enqueue("test.flow_key", {"account": 2}).pk for _ in range(2)]
    claimed = _claim("w1")
    assert _ids(claimed) == [one[0], two[0]]  # one per account, both at once
    assert claimed.full_keys == {"account:1", "account:2"}


def test_claim_flowed__finds_a_free_key_behind_a_long_line_of_a_full_one():
    store.enqueue_many("test.flow_key", [{"account": 1} for _ in range(3 * store.FLOW_SLACK)])
    behind = store.enqueue("test.flow_key", {"account": 2})
    assert len(_claim("w1", limit=1).jobs) == 1  # account 1's first
    # Every candidate of the first round is account 1's: the next round leaves the key out.
    assert _ids(_claim("w2", limit=1)) == [behind.pk]


def test_claim_flowed__types_that_name_the_same_key_share_its_limit():
    store.enqueue("test.flow_key", {"account": 7, "seconds": 1})
    _claim("w1")
    other = store.enqueue("test.flow_key_too", {"account": 7})
    free = store.enqueue("test.flow_key_too", {"account": 8})
    assert _ids(_claim("w2")) == [free.pk]
    assert Job.objects.get(pk=other.pk).status == Status.QUEUED


def test_claim_flowed__the_reaper_frees_the_slots_of_a_worker_that_died():
    ids = [store.enqueue("test.flow_type", {}).pk for _ in range(4)]
    assert _ids(_claim("dead")) == ids[:2]
    assert _ids(_claim("alive")) == []
    Job.objects.filter(pk__in=ids[:2]).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert store.reap().requeued == 2
    assert _ids(_claim("alive")) == ids[2:]


def test_claim_flowed__two_claimers_at_once_never_take_more_than_the_limit():
    for _ in range(3):
        Job.objects.all().delete()
        store.enqueue_many("test.flow_type", [{} for _ in range(6)])
        taken = run_at_once(lambda: _ids(_claim("a")), lambda: _ids(_claim("b")), lambda: _ids(_claim("c")))
        assert sum(len(ids) for ids in taken) == 2
        assert _running("test.flow_type") == 2


def test_claim_flowed__a_claim_of_the_same_key_waits_for_the_one_in_progress_and_sees_what_it_took():
    ids = [store.enqueue("test.flow_type", {}).pk for _ in range(4)]
    assert _ids(_claim("warm", limit=1)) == [ids[0]]  # the key's gate exists now
    store.complete("warm", [(ids[0], 1)])
    holding, done = threading.Event(), threading.Event()

    def claim_in_progress() -> None:
        # What a claim holds while it decides: the key's gate, and the job it takes.
        with driver().flow_transaction() as round_:
            round_.candidates(["default"], 2, [], [])  # ids[1] and ids[2], locked
            round_.lock_and_count(["type:test.flow_type"], ["type:test.flow_type"], [])
            Job.objects.filter(pk__in=ids[1:3]).update(status=Status.RUNNING, locked_by="first")
            holding.set()
            done.wait(30)
            round_.finish("first", [], None, {}, {})

    first = in_thread(claim_in_progress)
    holding.wait(30)
    result: list[store.FlowClaim] = []
    second = in_thread(lambda: result.append(_claim("second")))
    wait_for(lock_waiters, message="the second claim to wait on the key's gate")
    done.set()
    first.join(30)
    second.join(30)
    # Without the gate the second claim would have counted no running job and taken two.
    assert _ids(result[0]) == []
    assert result[0].full_keys == {"type:test.flow_type"}


# --- rates -----------------------------------------------------------------------------------


def _age_window(key: str, seconds: float) -> None:
    """Move every start recorded in ``key``'s window ``seconds`` into the past."""
    window = FlowGate.objects.get(key=key).window()
    window.starts = [(at - round(seconds * 1_000_000), count) for at, count in window.starts]
    FlowGate.objects.filter(key=key).update(recent=window.dump(), spare_pending_at=None, spare_pending=None)


def test_claim_flowed__a_rate_starts_at_most_its_count_in_a_window_and_says_when_it_frees():
    ids = [store.enqueue("test.flow_rate", {}).pk for _ in range(8)]
    assert _ids(_claim("w1")) == ids[:5]
    held = _claim("w2")
    assert _ids(held) == []
    assert 0 < held.rate_waits["type:test.flow_rate"] <= 1 + 1 / 64  # a second (and a grain)
    assert Job.objects.filter(pk__in=ids[5:], status=Status.QUEUED, attempts=0).count() == 3
    store.complete("w1", [(job_id, 1) for job_id in ids[:5]])
    assert _ids(_claim("w2")) == []  # finished jobs still count: a rate counts starts

    _age_window("type:test.flow_rate", 0.6)
    assert _ids(_claim("w2")) == []  # 0.6 s later: still within the second
    _age_window("type:test.flow_rate", 0.42)  # past the second and its grain (1/64 s)
    assert _ids(_claim("w2")) == ids[5:]


def test_claim_flowed__a_rate_key_limits_each_key_apart():
    hosts = ["a", "a", "a", "b", "b", "b"]
    ids = [store.enqueue("test.flow_rate_key", {"host": host}).pk for host in hosts]
    claimed = _claim("w1")
    assert _ids(claimed) == [ids[0], ids[1], ids[3], ids[4]]
    assert set(claimed.rate_waits) == {"host:a", "host:b"}


# --- queues ----------------------------------------------------------------------------------


def test_claim_flowed__a_queues_own_limits_hold_every_job_of_it():
    set_queue_limits("limited", concurrency=2, rate="3/m")
    ids = [store.enqueue("test.limited_queue", {}).pk for _ in range(5)]
    assert _ids(_claim("w1", queue="limited")) == ids[:2]
    assert _claim("w2", queue="limited").full_queues == {"limited"}
    store.complete("w1", [(ids[0], 1), (ids[1], 1)])
    assert _ids(_claim("w2", queue="limited")) == [ids[2]]  # the rate's third start
    store.complete("w2", [(ids[2], 1)])
    held = _claim("w2", queue="limited")
    assert _ids(held) == [] and 0 < held.queue_waits["limited"] <= 60 + 60 / 64


def test_queue_limits__an_operators_replace_the_settings_until_reset(settings):
    settings.JOBS_QUEUES = {"limited": {"concurrency": 4}, "ai": {"rate": "100/m"}}
    assert queues.current()["limited"].concurrency == 4
    assert queues.current()["limited"].source == queues.SETTINGS
    set_queue_limits("limited", rate="10/s")
    found = queues.current()["limited"]
    assert (found.concurrency, str(found.rate), found.source) == (None, "10/s", queues.OPERATOR)
    queues.reset_limits("limited")
    assert queues.current()["limited"].concurrency == 4
    with pytest.raises(ValueError, match="starts per s, m or h"):
        set_queue_limits("limited", rate="10 per second")
    with pytest.raises(ValueError, match="whole number"):
        set_queue_limits("limited", concurrency=0)
    with pytest.raises(ValueError, match="not a queue name"):
        queues.pause("no:such")


# --- the plain claim beside it ------------------------------------------------------------------


def test_claim__unkeyed_passes_over_the_jobs_flow_control_claims_and_keyed_only_takes_them():
    limited = store.enqueue("test.flow_type", {}).pk
    plain = store.enqueue("test.noop", {}).pk
    keyed = store.enqueue("test.flow_key", {"account": 1}).pk
    assert [job.id for job in store.claim("w1", ["default"], 10, unkeyed=True)] == [plain]
    assert _ids(_claim("w1", keyed_only=True)) == [limited, keyed]


def test_prune_gates__drops_idle_gates_and_the_next_claim_makes_them_again():
    ids = [store.enqueue("test.flow_type", {}).pk for _ in range(3)]
    assert len(_claim("w1", limit=1).jobs) == 1
    assert FlowGate.objects.filter(key="type:test.flow_type").exists()
    assert store.prune_gates() >= 1
    assert not FlowGate.objects.exists()
    assert _ids(_claim("w1")) == [ids[1]]
    assert FlowGate.objects.filter(key="type:test.flow_type").exists()


def test_prune_gates__keeps_a_window_with_recent_starts():
    store.enqueue_many("test.flow_rate", [{} for _ in range(2)])
    _claim("w1")
    assert store.prune_gates() == 0
    assert store.prune_gates(now=timezone.now() + timedelta(hours=2)) == 1


# --- leases (jobs.flow.leases) ---------------------------------------------------------------


def _lease_of(claim: store.FlowClaim) -> Leased:
    lease = claim.leases[LIMITED_GATE]
    assert lease is not None
    limits = registry.limits_of("test.noop_limited")
    assert limits is not None
    return Leased("test.noop_limited", *limits.keys("test.noop_limited", {}), moment(lease.until))


def test_claim_flowed__hands_a_lease_that_the_gate_keeps_and_counts_as_running():
    ids = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    got = _claim("w1", keyed_only=True, lease_most=64)
    assert _ids(got) == ids
    lease = got.leases[LIMITED_GATE]
    assert lease is not None and lease.jobs == 64 and lease.until - lease.now == leases.LENGTH
    window = FlowGate.objects.get(key=LIMITED_GATE).window()
    assert window.leases == [(lease.until, 64, "w1")]
    assert _spare()[:2] == (50_000 - 3 - 64, 100_000 - 3 - 64)  # as if 64 more had started
    store.enqueue("test.noop_limited", {})
    again = _claim("w1", keyed_only=True, lease_most=64)  # the worker's next count: a new lease
    assert again.leases[LIMITED_GATE] is not None
    assert [held[2] for held in FlowGate.objects.get(key=LIMITED_GATE).window().leases] == ["w1"]


def test_claim_leased__takes_only_the_leased_type_storing_its_keys_and_none_once_the_lease_ended():
    store.enqueue("test.noop_limited", {})
    lease = _lease_of(_claim("w1", keyed_only=True, lease_most=64))
    limited = [store.enqueue("test.noop_limited", {}).pk for _ in range(3)]
    others = [store.enqueue(name, {}).pk for name in ("test.noop", "test.noop_capped")]
    taken = store.claim("w1", ["default"], 10, leased=lease)
    assert [job.id for job in taken] == limited
    assert {(job.status, job.locked_by, job.attempts) for job in Job.objects.filter(pk__in=limited)} == {
        (Status.RUNNING, "w1", 1)
    }
    assert set(Job.objects.filter(pk__in=others).values_list("status", flat=True)) == {Status.QUEUED}
    store.enqueue("test.noop_limited", {})
    ended = lease._replace(until=timezone.now() - timedelta(seconds=1))
    assert store.claim("w1", ["default"], 10, leased=ended) == []
