from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from jobs.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    # Prometheus' default scrape path; answers 404 until JOBS_METRICS_TOKEN or
    # JOBS_METRICS_ALLOWED_IPS is set.
    path("metrics", metrics, name="jobs-metrics"),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
