"""Flow control's rules without a database: rates and their sliding window, what a type may
declare, which candidates a claim admits, and how a worker splits and wakes its claims."""

from __future__ import annotations

import random

import pytest
from django.core.exceptions import ImproperlyConfigured

from jobs.drivers.protocol import Candidate, GateSave, SparedPlan
from jobs.flow import admission, spare
from jobs.flow.admission import Rules, admit
from jobs.flow.limits import TypeLimits
from jobs.flow.queues import Controls, QueueLimits
from jobs.flow.rates import Rate, Window
from jobs.worker.flow import FlowControl, read_notices

S = 1_000_000  # a second in the windows' microseconds


# --- rates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count", "period"), [("60/m", 60, 60), ("5/s", 5, 1), (" 100 / h ", 100, 3600)]
)
def test_rate__reads_starts_per_second_minute_or_hour(text, count, period):
    assert Rate.parse(text) == Rate(count, period)


@pytest.mark.parametrize("text", ["60", "60/min", "0/s", "1.5/s", "-1/s", "200000/s", None, 5])
def test_rate__refuses_anything_else(text):
    with pytest.raises(ValueError):
        Rate.parse(text)


def test_window__counts_the_starts_of_the_last_period_only():
    rate = Rate(3, 1)
    window = Window([(0, 2), (int(0.5 * S), 1)])
    assert window.used(int(0.9 * S), rate) == 3
    assert window.room(int(0.9 * S), rate) == 0
    assert window.used(S, rate) == 1  # (0, 1]: the two starts at 0 left it
    assert window.frees_at(int(0.9 * S), rate) == S  # when the two oldest leave
    assert Window.load(window.dump()).starts == window.starts


def test_window__frees_when_enough_of_the_oldest_leave_counting_those_taken_now():
    rate = Rate(2, 1)
    window = Window([(0, 1)])
    assert window.frees_at(int(0.2 * S), rate, taking=1) == S  # the start at 0 leaves first
    assert Window().frees_at(0, rate, taking=2) == S  # both taken now: a second from now


def test_window__keeps_a_start_to_the_end_of_its_grain_so_never_shorter_than_it_happened():
    window = Window()
    grain = S // 64
    window.record(1, 2, period=1)
    window.record(grain - 5, 3, period=1)  # the same grain: one pair
    window.record(grain + 1, 1, period=1)
    assert window.starts == [(grain, 5), (2 * grain, 1)]
    assert window.used(S, Rate(10, 1)) == 6  # (0, 1 s]: the start at 1 µs still counts…
    assert window.used(S + grain, Rate(10, 1)) == 1  # …until its grain has passed


def test_window__a_garbled_row_starts_afresh():
    assert Window.load("not json").starts == []
    assert Window.load("").starts == []


# --- declarations --------------------------------------------------------------------------


def test_type_limits__renders_keys_per_payload_or_for_the_type():
    keyed = TypeLimits.declare("t", concurrency=1, concurrency_key="repo:{repo_id}", rate="5/s")
    assert keyed.keys("t", {"repo_id": 7}) == ("repo:7", "type:t")
    assert keyed.keys("t", {}) == (None, "type:t")  # no field: not held to the key
    assert TypeLimits.declare("t") is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "whole number from 1"),
        ({"concurrency": True}, "whole number from 1"),
        ({"concurrency_key": "repo:{repo_id}"}, "needs concurrency=N"),
        ({"rate_key": "repo:{repo_id}"}, "needs rate="),
        ({"rate": "fast"}, "like '60/m'"),
        ({"concurrency": 1, "concurrency_key": "type:{x}"}, "may not start with type:"),
        ({"rate": "1/s", "rate_key": "queue:{x}"}, "may not start with"),
        ({"concurrency": 1, "concurrency_key": "{repo_id}"}, "must start with a prefix"),
    ],
)
def test_type_limits__a_bad_declaration_fails_where_it_is_written(options, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        TypeLimits.declare("t", **options)


def test_type_limits__a_row_is_held_to_the_limits_declared_now():
    per_type = TypeLimits.declare("t", concurrency=2)
    assert per_type.effective("t", (None, None)) == ("type:t", None)  # enqueued before the limit
    per_key = TypeLimits.declare("t", concurrency=1, concurrency_key="k:{id}")
    assert per_key.effective("t", ("k:1", "type:t")) == ("k:1", None)  # the rate was dropped


# --- admission -----------------------------------------------------------------------------


LIMITS = {
    "two": TypeLimits.declare("two", concurrency=2),
    "per_key": TypeLimits.declare("per_key", concurrency=1, concurrency_key="k:{id}"),
    "rated": TypeLimits.declare("rated", rate="3/s"),
}


def _rules(**queues: QueueLimits) -> Rules:
    return Rules(queues=queues, type_limits=LIMITS.get)


def _job(job_id: int, type_name: str, key: str | None = None, queue: str = "q") -> Candidate:
    stored = LIMITS.get(type_name)
    concurrency, rate = stored.keys(type_name, {"id": key}) if stored else (None, None)
    return Candidate(job_id, type_name, queue, concurrency, rate)


def test_admit__takes_candidates_in_claim_order_while_their_limits_have_room():
    jobs = [_job(1, "two"), _job(2, "two"), _job(3, "two"), _job(4, "plain")]
    decided = admit(jobs, 10, 0, _rules(), {"type:two": 1}, {}, {})
    assert decided.admitted == [1, 4]  # one slot was free; the plain job is not held back
    assert decided.full_keys == {"type:two"} and decided.refused == 2


def test_admit__a_full_key_passes_to_the_next_key():
    jobs = [_job(1, "per_key", "a"), _job(2, "per_key", "a"), _job(3, "per_key", "b")]
    assert admit(jobs, 10, 0, _rules(), {}, {}, {}).admitted == [1, 3]
    assert admit(jobs, 1, 0, _rules(), {}, {}, {}).admitted == [1]  # no more than wanted


def test_admit__a_rate_records_the_starts_it_takes_and_says_when_it_frees():
    jobs = [_job(n, "rated") for n in range(1, 6)]
    window = Window([(-int(0.5 * S), 1)])
    decided = admit(jobs, 10, 0, _rules(), {}, {}, {"type:rated": window})
    assert decided.admitted == [1, 2]
    assert decided.windows["type:rated"].starts == [(-int(0.5 * S), 1), (0, 2)]
    assert decided.rate_waits == {"type:rated": int(0.5 * S)}  # when the old start leaves


def test_spare__half_the_concurrency_less_what_runs_and_the_rate_windows_room_for_the_limits_in_force():
    rules = Rules(queues={"q": QueueLimits("q", concurrency=10)}, type_limits=LIMITS.get)
    jobs = [_job(1, "two"), _job(2, "rated"), _job(3, "rated")]
    window = Window([(-int(0.5 * S), 1)])
    decided = admit(
        jobs, 10, 0, rules, {}, {"q": 1}, {"type:rated": window}, reckon=["type:rated", "queue:q"]
    )
    rated, queue = decided.gates["type:rated"], decided.gates["queue:q"]
    assert (rated.spare_slots, rated.spare_starts, rated.spare_until) == (None, 0, S)  # 1 + 2 of 3
    assert rated.spare_basis == "concurrency -, rate 3/s" and Window.load(rated.recent).starts[-1] == (0, 2)
    assert (queue.spare_slots, queue.spare_starts, queue.spare_until) == (10 // 2 - 1 - 3, None, None)
    assert queue.spare_basis == "concurrency 10, rate -"
    per_key = admit([_job(4, "per_key", "a")], 10, 0, rules, {}, {}, {}, reckon=["k:a"])
    assert "k:a" not in per_key.gates  # a per-key gate has no spare


def test_spend__lowers_each_spare_by_the_jobs_that_count_against_it_and_records_their_starts():
    plan = SparedPlan(
        "w",
        ["q"],
        10,
        [],
        [],
        False,
        ["queue:q", "type:rated"],
        ["concurrency 10, rate -", "concurrency -, rate 3/s"],
        [None, 1],
        ["rated", "plain"],
        [None, None],
        ["type:rated", None],
    )
    held = {
        "queue:q": GateSave("", 4, None, None, "concurrency 10, rate -"),
        "type:rated": GateSave("[[0,1]]", None, 2, S, "concurrency -, rate 3/s"),
    }
    jobs = [_job(1, "rated"), _job(2, "plain"), _job(3, "rated")]
    spent = spare.spend(plan, held, jobs, S // 2)
    assert spent["queue:q"] == GateSave("", 1, None, None, "concurrency 10, rate -")
    assert spent["type:rated"].spare_starts == 0
    assert Window.load(spent["type:rated"].recent).starts == [(0, 1), (S // 2, 2)]
    assert spare.spend(plan, held, [*jobs, _job(4, "rated")], S // 2) is None  # 3 starts, 2 spare
    assert spare.spend(plan, held, jobs, S) is None  # past its time
    assert spare.spend(plan, held, [_job(5, "two")], 0) is None  # a kind it does not take
    assert spare.spend(plan, {**held, "queue:q": held["queue:q"]._replace(spare_basis="x")}, jobs, 0) is None


@pytest.mark.parametrize("seed", range(200))
def test_spare__a_claim_within_it_is_one_admit_takes_whole_however_late(seed):
    """The spare never lets through what counting would hold back: a later claim of as
    many jobs as it allows, with nothing ended meanwhile, is admitted whole and none alone."""
    chance = random.Random(seed)
    limits = {
        "t": TypeLimits.declare("t", concurrency=chance.randint(1, 60), rate=f"{chance.randint(1, 60)}/s")
    }
    rules = Rules(queues={}, type_limits=limits.get)
    stored = limits["t"].keys("t", {})
    running = {"type:t": chance.randint(0, 20)}
    window = Window([(-chance.randint(0, S), chance.randint(0, 10)) for _ in range(chance.randint(0, 3))])
    first = [Candidate(n, "t", "q", *stored) for n in range(chance.randint(1, 8))]
    decided = admit(first, 8, 0, rules, running, {}, {"type:t": window}, reckon=["type:t"])
    spare = decided.gates["type:t"]
    allowed = min(spare.spare_slots, spare.spare_starts)
    if not allowed:
        return
    later = chance.randint(0, spare.spare_until - 1)
    running_now = {"type:t": running["type:t"] + len(decided.admitted)}
    recorded = Window.load(spare.recent)
    second = [Candidate(100 + n, "t", "q", *stored) for n in range(allowed)]
    again = admit(second, allowed, later, rules, running_now, {}, {"type:t": recorded})
    assert again.admitted == [job.id for job in second] and not again.alone


@pytest.mark.parametrize("seed", range(300))
def test_admit__deciding_a_roomy_claim_at_once_gives_what_deciding_each_candidate_gives(seed, monkeypatch):
    """``admit`` takes a claim whose every limit has room for all of it without asking for
    each candidate; on random claims (types sharing keys, per-key and type limits, queue
    limits, rates, rows keyed before their type's limits) it decides as the loop does."""
    chance = random.Random(seed)
    limits = {
        "wide": TypeLimits.declare(
            "wide", concurrency=chance.choice([4, 40, 400]), rate=chance.choice([None, "50/s"])
        ),
        "keyed": TypeLimits.declare("keyed", concurrency=chance.choice([1, 30]), concurrency_key="k:{id}"),
        "shared": TypeLimits.declare("shared", concurrency=chance.choice([2, 60]), concurrency_key="k:{id}"),
        "rated": TypeLimits.declare("rated", rate=chance.choice(["3/s", "500/m"]), rate_key="r:{id}"),
        "plain": None,
    }
    queues = {
        "q": QueueLimits(
            "q", concurrency=chance.choice([None, 8, 300]), rate=chance.choice([None, Rate(90, 60)])
        )
    }
    candidates = []
    for job_id in range(1, chance.randint(1, 40)):
        type_name = chance.choice(list(limits))
        declared = limits[type_name]
        stored = declared.keys(type_name, {"id": chance.randint(1, 3)}) if declared else (None, None)
        if chance.random() < 0.05:
            stored = (None, None)  # enqueued before its type declared its limits
        candidates.append(Candidate(job_id, type_name, chance.choice(["q", "other"]), *stored))
    running_keys = {key: chance.randint(0, 3) for key in ("type:wide", "k:1", "k:2", "k:3")}
    running_queues = {"q": chance.randint(0, 10)}
    windows_text = {
        gate: Window([(-chance.randint(1, S), chance.randint(0, 40))]).dump()
        for gate in ("type:wide", "r:1", "queue:q")
    }
    want = chance.randint(1, 50)
    rules = Rules(
        queues={name: found for name, found in queues.items() if found.limited}, type_limits=limits.get
    )

    def decide() -> tuple:
        windows = {gate: Window.load(text) for gate, text in windows_text.items()}
        decided = admit(list(candidates), want, 0, rules, running_keys, running_queues, windows, idle=None)
        return (
            decided.admitted,
            decided.rekeyed,
            decided.alone,
            decided.refused,
            {gate: window.dump() for gate, window in decided.windows.items()},
        )

    at_once = decide()
    monkeypatch.setattr(admission, "_room_for_all", lambda *args: None)
    assert at_once == decide()


def test_admit__a_claim_held_back_by_a_rate_waits_for_a_few_starts_not_for_one():
    busy = {"fast": TypeLimits.declare("fast", rate="1000/s")}
    window = Window([(n * S // 100, 10) for n in range(100)])  # 1,000 starts in the last second
    jobs = [Candidate(1, "fast", "q", None, "type:fast")]
    decided = admit(jobs, 64, S - 1, Rules(queues={}, type_limits=busy.get), {}, {}, {"type:fast": window})
    # It waits until 50 (5 % of the rate) are free: five claims of ten age out, not one.
    assert decided.rate_waits == {"type:fast": 4 * S // 100 + S}


def test_admit__a_queues_own_limits_hold_every_job_of_it():
    queue = QueueLimits("q", concurrency=3, rate=Rate(2, 60))
    jobs = [_job(n, "plain") for n in range(1, 5)]
    decided = admit(jobs, 10, 0, _rules(q=queue), {}, {"q": 0}, {})
    assert decided.admitted == [1, 2]  # the rate's two
    assert set(decided.queue_waits) == {"q"}
    decided = admit(jobs, 10, 0, _rules(q=QueueLimits("q", concurrency=3)), {}, {"q": 2}, {})
    assert decided.admitted == [1] and decided.full_queues == {"q"}


def test_admit__jobs_far_from_a_limit_are_claimed_freely_near_it_one_per_idle_child():
    many = {"wide": TypeLimits.declare("wide", concurrency=8)}
    rules = Rules(queues={}, type_limits=many.get)
    jobs = [Candidate(n, "wide", "q", "type:wide", None) for n in range(1, 9)]
    decided = admit(jobs, 10, 0, rules, {"type:wide": 1}, {}, {}, idle=2)
    assert decided.admitted == [1, 2, 3, 4, 5]  # 1, 2, 3 far from it (up to half of 8)…
    assert decided.alone == {4, 5} and decided.deferred == 3  # …then one per idle child


def test_admit__rekeys_a_row_enqueued_before_its_type_had_a_limit():
    old = Candidate(1, "two", "q", None, None)
    assert admit([old], 1, 0, _rules(), {}, {}, {}).rekeyed == {1: ("type:two", None)}


# --- the worker's side ---------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _flow(queues: dict[str, QueueLimits], limited_types: set[str] = frozenset()) -> FlowControl:
    flow = FlowControl(1.0, clock=_Clock())
    flow.controls = Controls(1.0, read=lambda: queues)
    flow._limited_types = set(limited_types)
    flow.controls.refresh()
    return flow


def test_split__paused_plain_mixed_and_limited_queues():
    flow = _flow(
        {"ai": QueueLimits("ai", rate=Rate(100, 60)), "mail": QueueLimits("mail", paused=True)},
        limited_types={"default"},
    )
    split = flow.split(["ai", "default", "mail", "reports"])
    assert (split.plain, split.mixed, split.limited, split.out) == (
        ["reports"],
        ["default"],
        ["ai"],
        ["mail"],
    )


def test_split__a_queue_at_its_limit_is_left_out_until_a_slot_frees_or_its_window_does():
    flow = _flow({"ai": QueueLimits("ai", concurrency=1), "ml": QueueLimits("ml", rate=Rate(1, 1))})
    flow.full_queues.add("ai")
    flow.queue_until["ml"] = flow._clock() + 0.5
    assert flow.split(["ai", "ml"]).out == ["ai", "ml"]
    assert flow.retry_at() == pytest.approx(100.5)
    flow.slots_freed()
    flow._clock.now += 0.6  # type: ignore[attr-defined]
    flow.expire_waits()
    assert flow.split(["ai", "ml"]).limited == ["ai", "ml"]
    assert flow.retry_at() is None


def test_read_notices__tells_new_jobs_plain_new_jobs_keyed_new_jobs_and_freed_slots_apart():
    notices = read_notices(["ai", "plain:default", "plain:mail", "keyed:sync", "freed:ai", "freed:default"])
    assert (notices.due, notices.plain, notices.keyed, notices.freed) == (
        {"ai"},
        {"default", "mail"},
        {"sync"},
        {"ai", "default"},
    )


def test_jobs_due__a_plain_notice_leaves_a_mixed_queues_keyed_claim_out_and_a_bare_one_brings_it_back():
    flow = FlowControl(1.0, clock=_Clock())
    flow.no_keyed |= {"default"}
    flow.no_unkeyed |= {"default"}
    flow.jobs_due({"default"}, keyed=False)  # only plain jobs came: no keyed claim for them
    assert ("default" in flow.no_keyed, "default" in flow.no_unkeyed) == (True, False)
    flow.jobs_due({"default"})  # keyed ones perhaps (a release, a retry, a mixed enqueue)
    assert "default" not in flow.no_keyed


def test_jobs_due__a_keyed_notice_leaves_a_mixed_queues_plain_claim_out():
    """Its plain claim would read past every keyed job waiting in the queue to find none."""
    flow = FlowControl(1.0, clock=_Clock())
    flow.no_keyed |= {"default"}
    flow.no_unkeyed |= {"default"}
    flow.jobs_due({"default"}, plain=False)  # only keyed jobs came
    assert ("default" in flow.no_keyed, "default" in flow.no_unkeyed) == (False, True)
    flow.polled()  # the poll tries both again
    assert "default" not in flow.no_unkeyed


def test_next_batch__a_job_held_to_a_concurrency_limit_goes_to_a_child_alone():
    from collections import deque

    from jobs.store import ClaimedJob
    from jobs.worker.pool import Lane

    def job(job_id: int, held: bool = False, queue: str = "default") -> ClaimedJob:
        return ClaimedJob(job_id, "t", "{}", 1, 3, queue, held=held)

    lane = Lane(queues=["default"], slots=1)
    lane.buffer = deque([job(1), job(2), job(3, held=True), job(4, held=True), job(5)])
    assert [[j.id for j in lane.next_batch(8)] for _ in range(4)] == [[1, 2], [3], [4], [5]]
    shared = Lane(queues=["default", "ai"], slots=3)  # a fair share: one queue per batch
    shared.buffer = deque([job(1, held=True), job(2, held=True), job(3)])
    assert [[j.id for j in shared.next_batch(8)] for _ in range(2)] == [[1], [2]]
