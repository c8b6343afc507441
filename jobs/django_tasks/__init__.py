"""The engine as a ``django.tasks`` backend: an adapter at the edge that the core never imports.

    backend   ``JobsBackend`` (also importable as ``jobs.backends.JobsBackend``, the path
              in users' settings): enqueue, results, the options of each task
    types     tasks as the engine's job types, found by module path: the registry's
              resolver for them (``jobs.registry.add_resolver``), which the backend
              registers when it is created
    runner    one try of a task in a worker's child: its signals and its return value
    results   a task's row as a ``TaskResult``
    rows      the read those results are built from, one statement for a batch

The core (registry, store, worker) knows a task only as a ``JobType`` the resolver returned.
Nothing here is imported at the package's import: Django may create the backend (when the
first ``@task`` is declared) before the app registry is ready.
"""
