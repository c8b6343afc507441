"""Who may see the Background jobs section, and who may also press Retry and Cancel.

Seeing any page of the section needs ``platform.view_jobs``; Retry and Cancel also need
``platform.change_job``. The admin's generic add, edit and delete stay off for everybody:
a saved form would overwrite what a worker wrote to the row in the meantime.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

VIEW_PERMISSION = "platform.view_jobs"
CHANGE_PERMISSION = "platform.change_job"


def can_view(user: Any) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION))


def can_operate(user: Any) -> bool:
    """Retry and Cancel change data: they need the change permission on top of viewing."""
    return can_view(user) and bool(user.has_perm(CHANGE_PERMISSION))


class ViewJobsPermissionMixin:
    """Every page of the section is read-only and gated by ``platform.view_jobs``."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_view(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_view(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
