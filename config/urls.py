from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from jobs.views import metrics

# Every app's admin module, imported here rather than at start-up (config/apps.py).
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    # Prometheus' default scrape path; answers 404 until JOBS_METRICS_TOKEN or
    # JOBS_METRICS_ALLOWED_IPS is set.
    path("metrics", metrics, name="jobs-metrics"),
    # Deliveries from GitHub, Jira, ClickUp and Monday, each verified its own way.
    path("webhooks/", include("workspaces.webhooks.urls")),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
