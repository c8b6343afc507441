"""Webhooks: the fast path. A provider tells us something changed; we verify that it is the
provider, record the delivery and queue the sync that picks the change up. Nothing else
happens in the request: the jobs do the work, and the reconcile timer is the safety net for
deliveries that never arrive.

| endpoint | verified by | queues |
|---|---|---|
| ``POST /webhooks/github/`` | ``X-Hub-Signature-256`` (``GITHUB_WEBHOOK_SECRET``) | ``repository.ingest``, ``pullrequest.sync``, ``checks.sync`` |
| ``POST /webhooks/jira/`` | ``X-Hub-Signature`` (``JIRA_WEBHOOK_SECRET``) | ``workmanagement.sync`` |
| ``POST /webhooks/clickup/`` | ``X-Signature`` (``CLICKUP_WEBHOOK_SECRET``, per webhook) | ``workmanagement.sync`` |
| ``POST /webhooks/monday/`` | the ``Authorization`` JWT (``MONDAY_SIGNING_SECRET``), bound to its body | ``workmanagement.sync`` |
"""
