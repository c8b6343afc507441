"""The admin, discovered by the URLconf instead of at start-up.

Django's own ``AdminConfig`` imports every app's ``admin`` module in ``ready()``: the admin
pages, and what they import (the workspaces' credential encryption, the engine's admin
pages and their store, django-q2's admin) in every process, a worker's too, which serves no
page. Here ``config/urls.py`` discovers them, so a process discovers the admin when it first
resolves a URL (a web process: at start, through ``config.wsgi`` or ``config.asgi``), and the
admin's system checks discover it before they look at the registered pages, so ``manage.py
check`` (and ``runserver``, ``migrate``) check every ``ModelAdmin`` as before.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class AdminConfig(SimpleAdminConfig):
    """``django.contrib.admin`` without the autodiscovery at start-up (see the module)."""

    def ready(self) -> None:
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(check_discovered_admin, checks.Tags.admin)


def check_discovered_admin(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Django's checks of the registered ``ModelAdmin``s, once every admin module is imported."""
    admin.autodiscover()
    return check_admin_app(app_configs, **kwargs)


def load_urlconf() -> None:
    """Import the URLconf, and with it the admin: what a web process does at start
    (``config.wsgi``, ``config.asgi``), so that its first request does not pay for it."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
