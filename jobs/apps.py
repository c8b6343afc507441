from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class JobsConfig(AppConfig):
    name = "jobs"
    # The label makes the permissions read ``platform.view_jobs`` and the admin section
    # "Platform", as operators know them; the code stays in ``jobs/``.
    label = "platform"
    verbose_name = "Platform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobs.conf import fill_in_defaults

        fill_in_defaults()
        from jobs import checks  # noqa: F401 - registers the engine's system check

        autodiscover_modules("tasks")
