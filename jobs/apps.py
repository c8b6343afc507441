from django.apps import AppConfig
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate
from django.tasks import task_backends
from django.utils.module_loading import autodiscover_modules


class JobsConfig(AppConfig):
    name = "jobs"
    # The label makes the permissions read ``platform.view_jobs`` and the admin section
    # "Platform", as operators know them; the code stays in ``jobs/``.
    label = "platform"
    verbose_name = "Platform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobs import checks  # noqa: F401 - registers the engine's system checks

        connection_created.connect(_prepare_session, dispatch_uid="jobs.prepare_session")
        autodiscover_modules("tasks")
        # The project's task backends, created now: an adapter among them (the engine's
        # own, jobs.django_tasks) adds its resolver to the registry as it is created, so a
        # worker finds its tasks and serves its queues without the engine importing it.
        task_backends.all()
        from jobs.timetable import runs

        runs.declare_all()  # each timer's runs are a job type (declared once the tasks are)
        from jobs import bulk  # noqa: F401 - the engine's own job type: Retry/Dismiss all matching

        post_migrate.connect(_install_timers, sender=self, dispatch_uid="jobs.install_timers")
        _guard_django_q()


def _guard_django_q() -> None:
    """Every task django-q2 queues (a schedule's run, a resubmitted task) passes the guard."""
    from django.apps import apps

    if apps.is_installed("django_q"):
        from django_q.signals import pre_enqueue

        from jobs.schedule_guard import guard_task

        pre_enqueue.connect(guard_task, dispatch_uid="jobs.schedule_guard")


def _prepare_session(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """Every new session as its driver wants it (on MariaDB: in UTC, as the engine's SQL
    compares the columns with CURRENT_TIMESTAMP)."""
    from jobs.drivers import for_connection

    for_connection(connection).prepare_session(connection)


def _install_timers(sender: AppConfig, using: str = "default", **kwargs: object) -> None:
    """The declared timers as rows, after ``migrate`` (as Django creates permissions)."""
    from django.db import DEFAULT_DB_ALIAS

    from jobs.timetable import install

    if using == DEFAULT_DB_ALIAS:  # the engine's tables live in the default database
        install.install()
