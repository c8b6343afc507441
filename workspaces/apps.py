from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Timer steps register on import, like the job types of tasks.py.
        from workspaces import timers  # noqa: F401
