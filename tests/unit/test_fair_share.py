"""The fair share of a lane serving several queues: no queue holds more than ``slots - 1``
children, what a claim may take, and which buffered jobs an idle child gets. (A real worker
keeping a slot for another queue is in tests/acceptance/test_runworker_lifecycle.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from jobs.store import ClaimedJob
from jobs.worker.pool import Lane

QUEUES = {"mail.job": "mail", "ai.job": "ai", "default.job": "default"}


@dataclass
class FakeChild:
    batch: list[ClaimedJob] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return bool(self.batch)


def job(number: int, type_name: str) -> ClaimedJob:
    return ClaimedJob(number, type_name, "{}", 1, 3, QUEUES[type_name])


def lane(
    slots: int = 2, queues: tuple[str, ...] = ("ai", "default", "mail"), running: tuple[str, ...] = ()
) -> Lane:
    shared = Lane(queues=list(queues), slots=slots)
    shared.children = [FakeChild([job(100 + n, type_name)]) for n, type_name in enumerate(running)]  # type: ignore[misc]
    shared.children += [FakeChild() for _ in range(slots - len(running))]  # type: ignore[misc]
    return shared


def test_share__slots_minus_one_for_a_lane_of_several_queues_from_two_slots_on():
    assert lane(slots=2).share == 1
    assert lane(slots=4).share == 3
    assert lane(slots=1).share is None  # one slot cannot be shared
    assert lane(slots=2, queues=("ai",)).share is None  # --queue ai:2


def test_claimable__leaves_out_a_queue_at_its_share_and_takes_no_more_than_its_room():
    assert lane(running=("ai.job",)).claimable(want=1, size=1, max_prefetch=32) == (["default", "mail"], 1)
    both_idle = lane()
    assert both_idle.claimable(want=2, size=1, max_prefetch=32) == (
        ["ai", "default", "mail"],
        1,
    )  # one at a time
    both_idle.buffer.append(job(1, "ai.job"))
    assert both_idle.claimable(want=1, size=1, max_prefetch=32) == (["default", "mail"], 1)
    assert lane(slots=4, running=("ai.job",)).claimable(want=3, size=1, max_prefetch=32) == (
        ["ai", "default", "mail"],
        2,
    )


def test_claimable__very_short_jobs_of_a_queue_at_its_share_may_wait_ready_for_its_child():
    """Batches of very short jobs are claimed ahead, so the child never waits on a claim;
    the share still counts children, not jobs."""
    shared = lane(running=("ai.job",))
    assert shared.claimable(want=40, size=8, max_prefetch=32) == (["ai", "default", "mail"], 8)
    shared.buffer.extend(job(n, "ai.job") for n in range(8))
    assert shared.claimable(want=32, size=8, max_prefetch=32) == (["default", "mail"], 16)
    assert shared.next_batch(size=8) == []  # ready for the ai child, not for the other one


def test_claimable__without_a_share_asks_every_queue_for_everything():
    single = lane(slots=2, queues=("ai",), running=("ai.job",))
    assert single.claimable(want=5, size=4, max_prefetch=32) == (["ai"], 5)


def test_next_batch__skips_a_queue_at_its_share_and_keeps_the_claim_order_of_the_rest():
    shared = lane(running=("ai.job",))
    shared.buffer.extend([job(1, "ai.job"), job(2, "mail.job"), job(3, "ai.job"), job(4, "mail.job")])

    assert shared.ready() == 2
    assert [j.id for j in shared.next_batch(size=4)] == [2, 4]  # one queue per batch
    assert [j.id for j in shared.buffer] == [1, 3]


def test_next_batch__nothing_when_every_buffered_job_is_of_a_queue_at_its_share():
    shared = lane(running=("mail.job",))
    shared.buffer.append(job(1, "mail.job"))

    assert shared.ready() == 0
    assert shared.next_batch(size=1) == []
    assert [j.id for j in shared.buffer] == [1]


def test_claimable__asks_only_the_queues_that_may_have_due_jobs():
    shared = lane(running=("ai.job",))
    shared.claimed_short(["default", "mail"])  # a claim of them came back short

    assert shared.claimable(want=1, size=1, max_prefetch=32) == ([], 0)  # ai is at its share
    shared.pending.add("mail")  # a notification for mail
    assert shared.claimable(want=1, size=1, max_prefetch=32) == (["mail"], 1)
    shared.children[0].batch = []  # the ai job ended: its queue is still pending
    assert shared.claimable(want=2, size=1, max_prefetch=32) == (["ai", "mail"], 1)


# --- borrowing the reserved slot -----------------------------------------------------------


def borrowing_lane(running: tuple[str, ...] = ("ai.job",), limit: float = 1.0) -> Lane:
    """Two slots, one busy with ``running``; ai jobs seen to take 0.1 s; nothing else pending."""
    shared = lane(running=running)
    shared.borrow_limit = limit
    shared.note(job(1, "ai.job"), 0.1)
    shared.claimed_short(["default", "mail"])  # the other queues came back short
    return shared


def test_borrow__a_queue_of_short_jobs_takes_the_reserved_slot_while_no_other_queue_has_work():
    shared = borrowing_lane()
    assert shared.claimable(want=1, size=1, max_prefetch=32) == (["ai"], 1)
    shared.buffer.append(job(2, "ai.job"))
    assert shared.ready() == 1
    assert [j.id for j in shared.next_batch(size=1)] == [2]


def test_borrow__the_slot_goes_back_as_soon_as_another_queue_may_have_work():
    shared = borrowing_lane()
    shared.pending.add("mail")  # a notification for mail (or a poll)
    assert shared.claimable(want=1, size=1, max_prefetch=32) == (["mail"], 1)
    shared.buffer.extend([job(2, "ai.job"), job(3, "mail.job")])
    assert [j.id for j in shared.next_batch(size=1)] == [3]  # mail first, ai waits
    assert shared.next_batch(size=1) == []  # and ai does not borrow while mail may have more


def test_borrow__never_for_a_queue_or_type_not_known_to_be_short():
    unseen = borrowing_lane()
    unseen.longest_in_queue.clear()
    unseen.longest.clear()
    assert unseen.claimable(want=1, size=1, max_prefetch=32) == ([], 0)  # no try of ai seen yet

    slow = borrowing_lane()
    slow.note(job(1, "ai.job"), 5.0)  # one try of ai took longer than the limit
    assert slow.claimable(want=1, size=1, max_prefetch=32) == ([], 0)

    new_type = borrowing_lane()
    new_type.buffer.append(ClaimedJob(2, "ai.other", "{}", 1, 3, "ai"))  # a type not seen yet
    assert new_type.ready() == 0
    assert new_type.next_batch(size=1) == []  # it waits for ai's own slot

    off = borrowing_lane(limit=0)  # JOBS_SHARE_BORROW_LIMIT=0
    assert off.claimable(want=1, size=1, max_prefetch=32) == ([], 0)


def test_borrow__a_type_whose_timeout_is_within_the_limit_is_short_before_it_ever_ran():
    shared = borrowing_lane()
    shared.timeout_of = lambda type_name: 0.5 if type_name == "ai.other" else None
    shared.buffer.append(ClaimedJob(2, "ai.other", "{}", 1, 3, "ai"))
    assert [j.id for j in shared.next_batch(size=1)] == [2]


def test_observe__keeps_each_types_and_queues_longest_try():
    shared = lane()
    shared.observe(0.5, [job(1, "ai.job"), job(2, "ai.job")])
    shared.note(job(4, "mail.job"), 2.0)
    assert shared.longest == {"ai.job": 0.25, "mail.job": 2.0}
    assert shared.longest_in_queue == {"ai": 0.25, "mail": 2.0}


def test_observe__a_childs_first_batch_notes_its_tries_but_does_not_set_the_pace():
    shared = lane()
    shared.observe(0.030, [job(1, "ai.job")], first=True)  # a new child's set-up and one job
    assert shared.average_duration is None
    assert shared.batch_size(0.02) == 1  # the pace is not known yet
    assert shared.longest == {"ai.job": 0.030}
    shared.observe(0.0002, [job(2, "ai.job")])
    assert shared.average_duration == 0.0002
    assert shared.batch_size(0.02) == 64  # short jobs: full batches from the next one


def test_observe__a_batch_moves_the_pace_as_many_tries_as_it_held():
    shared = lane()
    shared.observe(0.004, [job(1, "ai.job")])
    shared.observe(0.001, [job(n, "ai.job") for n in range(2, 7)])  # five tries of 0.2 ms
    assert shared.average_duration == pytest.approx(0.004 * 0.8**5 + 0.0002 * (1 - 0.8**5))
    shared.observe(0.5, [job(7, "ai.job")])  # one slow try: one try's weight
    assert shared.average_duration == pytest.approx(0.004 * 0.8**6 + 0.0002 * (1 - 0.8**5) * 0.8 + 0.5 * 0.2)
