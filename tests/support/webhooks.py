"""Deliveries signed the way each provider signs them, for the webhook tests."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import jwt

GITHUB_SECRET = "github-webhook-secret-0123456789abcdef"
JIRA_SECRET = "jira-webhook-secret-0123456789abcdef"
CLICKUP_SECRET = "clickup-webhook-secret-0123456789abcdef"
MONDAY_SECRET = "monday-signing-secret-0123456789abcdef0123456789abcdef0123456789"


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def hex_hmac(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github_headers(
    body: bytes, event: str, *, secret: str = GITHUB_SECRET, delivery: str = ""
) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": f"sha256={hex_hmac(secret, body)}",
    }


def jira_headers(body: bytes, *, secret: str = JIRA_SECRET, delivery: str = "") -> dict[str, str]:
    return {
        "X-Atlassian-Webhook-Identifier": delivery or str(uuid.uuid4()),
        "X-Hub-Signature": f"sha256={hex_hmac(secret, body)}",
    }


def clickup_headers(body: bytes, *, secret: str = CLICKUP_SECRET) -> dict[str, str]:
    return {"X-Signature": hex_hmac(secret, body)}


def monday_headers(
    audience: str, *, secret: str = MONDAY_SECRET, expires_in: int = 300, algorithm: str = "HS256"
) -> dict[str, str]:
    now = int(time.time())
    claims = {"accountId": 1825528, "userId": 4012689, "aud": audience, "iat": now, "exp": now + expires_in}
    return {"Authorization": jwt.encode(claims, secret, algorithm=algorithm)}


def push(full_name: str = "acme/api", *, ref: str = "refs/heads/main", default_branch: str = "main") -> dict:
    return {"ref": ref, "deleted": False, "repository": repository(full_name, default_branch=default_branch)}


def repository(
    full_name: str = "acme/api", *, default_branch: str = "main", host: str = "github.com"
) -> dict:
    return {
        "full_name": full_name,
        "html_url": f"https://{host}/{full_name}",
        "clone_url": f"https://{host}/{full_name}.git",
        "default_branch": default_branch,
    }


def jira_issue(
    event: str = "jira:issue_updated", *, project: str = "PAY", site: str = "https://acme.atlassian.net"
) -> dict:
    return {
        "webhookEvent": event,
        "issue": {
            "id": "10001",
            "key": f"{project}-1",
            "self": f"{site}/rest/api/3/issue/10001",
            "fields": {"project": {"id": "10000", "key": project}},
        },
    }


def clickup_task(event: str = "taskUpdated", *, webhook_id: str = "wh-1", task_id: str = "abc1") -> dict:
    return {
        "event": event,
        "webhook_id": webhook_id,
        "task_id": task_id,
        "history_items": [{"id": str(uuid.uuid4())}],
    }


def monday_event(event: str = "update_column_value", *, board: int = 1234567890, trigger: str = "") -> dict:
    return {
        "event": {
            "type": event,
            "boardId": board,
            "pulseId": 987,
            "triggerUuid": trigger or uuid.uuid4().hex,
        }
    }
