"""The webhook endpoints (under ``/webhooks/``). These views, and only these, are exempt from
CSRF: providers cannot hold a token, and each verifies its own signature instead."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from workspaces.webhooks.clickup import ClickUpHook
from workspaces.webhooks.github import GitHubHook
from workspaces.webhooks.jira import JiraHook
from workspaces.webhooks.monday import MondayHook
from workspaces.webhooks.receiver import Hook, receive


def endpoint(hook: Hook):
    @csrf_exempt
    def view(request: HttpRequest) -> HttpResponse:
        return receive(request, hook)

    view.__name__ = f"{hook.provider}_webhook"
    return view


app_name = "webhooks"
urlpatterns = [
    path("github/", endpoint(GitHubHook()), name="github"),
    path("jira/", endpoint(JiraHook()), name="jira"),
    path("clickup/", endpoint(ClickUpHook()), name="clickup"),
    path("monday/", endpoint(MondayHook()), name="monday"),
]
