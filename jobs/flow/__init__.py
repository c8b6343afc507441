"""Flow control: fleet-wide concurrency and rate limits per job type, per key and per
queue, and queues that can be paused (``docs/flow-control.md``).

    rates       a rate ("60/m") and the sliding window of recent starts kept per rate key
    limits      a job type's declared limits and the limit keys an enqueue stores on its row
    queues      the queues' limits and pause (``JOBS_QUEUES``, the operators' rows) and the
                verbs that change them: pause, resume, set_limits
    admission   which claim candidates may start now, given what runs and what started
    spare       what a type's or queue's limits surely still allow, kept on its gate
    leases      jobs of a type far from its limits a worker takes without the type's gate
    usage       what the admin page shows: limits in force, running, starts, waiting

Limits are enforced where jobs are claimed, in the database (``jobs.store.claim_flowed``
and the drivers' ``flow_transaction``): what runs is counted from the rows themselves (jobs
running with the limit's key), so a job that ends in any way, or is reaped, frees its slot;
claims of one limit key are serialised by a row lock on its gate (``FlowGate``) for the
claim transaction only. The worker's side (which claim serves which queue, what it waits
for) is ``jobs.worker.flow``; the page is ``jobs.admin.flow_page``.
"""
