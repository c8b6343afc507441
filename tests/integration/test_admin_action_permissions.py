"""No list action is offered to, or runs for, a user who may only view: every registered
model admin of every app (the engine's, the domains', django-q2's, Django's own) is walked,
and every action it declares needs a permission beyond viewing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.options import ActionLocation
from django.contrib.auth.models import Permission, User
from django.test import Client, RequestFactory
from django.urls import reverse

from jobs.models import Job
from tests.support.admin_walk import one_of_each, registered, row_for

pytestmark = pytest.mark.django_db


def _viewer() -> User:
    """Staff with every view permission there is, and nothing else."""
    user = User.objects.create_user("looker", password="pw-for-tests", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    return user


def _declared_actions(model_admin: admin.ModelAdmin) -> dict[str, Any]:
    """Every action of the admin, on its list and on its change form, before any permission
    filters it (name → function)."""
    return {
        action.name: action.func
        for location in ActionLocation
        for action in model_admin._get_base_actions(action_location=location)
    }


def _counts() -> dict[str, int]:
    from django_q.models import OrmQ, Schedule, Task

    return {
        "jobs": Job.objects.count(),
        "django-q2 tasks": Task.objects.count() + OrmQ.objects.count(),
        "schedules": Schedule.objects.count(),
    }


def test_every_admin_action__declares_a_permission_beyond_viewing() -> None:
    undeclared = []
    for model, model_admin in registered().items():
        for name, func in _declared_actions(model_admin).items():
            needs = set(getattr(func, "allowed_permissions", ()))
            if not needs or needs <= {"view"}:
                undeclared.append(f"{model._meta.label}: {name}")

    assert undeclared == []


def test_view_only_user__is_offered_no_action_and_a_posted_one_runs_nothing() -> None:
    rows = one_of_each()
    viewer = _viewer()
    client = Client()
    client.force_login(viewer)
    before = _counts()

    offered, walked = {}, 0
    for model, model_admin in registered().items():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        request = RequestFactory().get(url)
        request.user = viewer
        for location in ActionLocation:
            if actions := sorted(model_admin.get_actions(request, action_location=location)):
                offered[f"{model._meta.label} ({location.value})"] = actions
        row = row_for(model, rows)
        for name in _declared_actions(model_admin):
            walked += 1
            response = client.post(url, {"action": name, "_selected_action": [row.pk], "index": 0})
            assert response.status_code < 500, f"{model._meta.label}: {name}"

    assert offered == {}
    assert _counts() == before
    # The eight workspace actions, the job page's three, reprocess, django-q2's resubmit, …
    assert walked >= 15


@pytest.mark.parametrize(
    ("model_name", "action", "job_type"),
    [
        ("organization", "purge_retained", "retention.purge"),
        # The provisioning workflow's first step (the walk's repository is ingested already).
        ("workspace", "provision", "workspace.ready"),
        ("workspace", "mine_decisions", "decisions.mine"),
        ("repository", "reindex", "repository.ingest"),
        ("repository", "analyse", "repository.analyse"),
        ("repository", "sync_pull_requests", "checks.sync"),
        ("repository", "build_capsules", "capsules.retrospective"),  # a workflow's first step
        ("workconnection", "sync_now", "workmanagement.sync"),
    ],
)
def test_workspace_list_action__queues_for_a_user_who_may_change_and_not_for_a_viewer(
    model_name: str, action: str, job_type: str
) -> None:
    rows = one_of_each()
    row = next(row for model, row in rows.items() if model._meta.model_name == model_name)
    url = reverse(f"admin:workspaces_{model_name}_changelist")
    viewer, changer = _viewer(), User.objects.create_user("changer", is_staff=True)
    changer.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="workspaces", codename__in=[f"view_{model_name}", f"change_{model_name}"]
        )
    )
    data = {"action": action, "_selected_action": [row.pk], "index": 0}

    for user, queued in ((viewer, 0), (changer, 1)):
        client = Client()
        client.force_login(user)
        Job.objects.filter(type=job_type).delete()
        client.post(url, data)
        assert Job.objects.filter(type=job_type).count() == queued, user.username
