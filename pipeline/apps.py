from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = "Email pipeline"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from pipeline import checks, signals  # noqa: F401 - checks registers itself
        from pipeline.models import EmailMessage

        post_delete.connect(signals.forget_deleted_email, sender=EmailMessage, dispatch_uid="pipeline.forget")
