"""Workflows whose progress is transactional: chains and groups of steps, each step a job of
a declared type, and a step's completion, its writes (``atomic=True``) and the release of
the steps that follow it committed in one transaction.

    flow       steps, chains and groups, and the plan ``jobs.start`` writes
    progress   the only code that changes a workflow's or a step's state

The public API is ``jobs.step``, ``jobs.chain``, ``jobs.group``, ``jobs.start`` and the
workflow helpers of ``jobs`` (``docs/workflows.md``).
"""
