from django.apps import AppConfig
from django.db.models.signals import post_delete


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from workspaces import checks  # noqa: F401 - registers the deployment checks
        from workspaces.models import Repository
        from workspaces.services import checkouts

        # A deleted repository's working folder goes with it (so does a workspace's or an
        # organization's: deleting them deletes their repositories one by one).
        post_delete.connect(checkouts.on_repository_deleted, sender=Repository, dispatch_uid="checkouts")
