"""``jobs.backends.JobsBackend``, the path users' settings name the engine's ``django.tasks``
backend by. The backend is the adapter's (``jobs.django_tasks.backend``); this module only
keeps that path.

    TASKS = {"default": {"BACKEND": "jobs.backends.JobsBackend", "QUEUES": ["default"]}}
"""

from jobs.django_tasks.backend import JobsBackend

__all__ = ["JobsBackend"]
