"""Our engine through django.tasks (``jobs.backends.JobsBackend``) on django-tasks-db's
workload: the like-for-like figure next to bench/peers/django_tasks_db_bench.py.

Run by bench/compare.py with the project venv's Python, from the project root
(``python -m bench.peers.ours_tasks_bench --runs 1 --jobs N``), against DATABASE_URL (default
``jp_compare``); it prints one ``RESULT {json}`` line. The tasks are the very module the
django-tasks-db harness runs (bench/peers/task_functions.py, plain ``@task`` code), on the
backend of ``config.settings_test``. Per run, as bench/peers/ours_bench.py with
``through_tasks`` (``bench.lib.engine``):

- drain: 2 ``manage.py runworker`` processes at their default settings (LOG_LEVEL=WARNING),
  ``jobs`` no-op tasks enqueued with ``Task.enqueue`` one by one in one transaction (as the
  django-tasks-db harness does: django.tasks has no bulk call), jobs/s from its commit until
  none is queued or running. Each try reads its row for its ``TaskResult`` and sends
  ``task_started`` and ``task_finished``, as django.tasks requires;
- wake-up: one idle worker, ``stamp_task.enqueue(...)`` 20 ms apart, ms from the enqueue
  call to the task's start, p50 / p95;
- bulk enqueue: none (django.tasks has no bulk API).
"""

from bench.peers.ours_bench import main

if __name__ == "__main__":
    main(through_tasks=True, doc=__doc__)
