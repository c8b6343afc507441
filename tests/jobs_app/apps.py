from django.apps import AppConfig


class TestJobsConfig(AppConfig):
    name = "tests.jobs_app"
    label = "testjobs"
    default_auto_field = "django.db.models.BigAutoField"
