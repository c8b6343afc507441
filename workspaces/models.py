"""The workspace domain: organizations on trial, their workspaces, repositories and pull
requests, work connections (Jira, ClickUp, Monday) and their items, and what the AI jobs
produce. Fields and small helpers only; the work lives in ``workspaces.services``."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class Organization(models.Model):
    class Plan(models.TextChoices):
        TRIAL = "trial"
        PAID = "paid"

    name = models.CharField(max_length=200)
    billing_email = models.EmailField()
    plan = models.CharField(max_length=10, choices=Plan.choices, default=Plan.TRIAL)
    trial_ends_at = models.DateTimeField(null=True, blank=True)
    # How long AI prompt and output bodies are kept before retention.purge blanks them.
    retention_days = models.PositiveSmallIntegerField(default=30)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [
            # The trial sweep: organizations on trial by trial end.
            models.Index(
                fields=["trial_ends_at"], condition=models.Q(plan="trial"), name="workspaces_org_trial"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class TrialReminder(models.Model):
    """One row per trial reminder sent: the unique pair makes it once per trial.

    A trial that is extended gets a new ``trial_ends_at``, hence one new reminder.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="trial_reminders")
    trial_ends_at = models.DateTimeField()
    email = models.EmailField()
    sent_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "trial_ends_at"], name="workspaces_one_reminder_per_trial"
            )
        ]

    def __str__(self) -> str:
        return f"{self.organization} trial ending {self.trial_ends_at:%Y-%m-%d}"


class Workspace(models.Model):
    class Status(models.TextChoices):
        NEW = "new"
        READY = "ready"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="workspaces")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    # The workspace's "brain": what brain.derive read from its repositories.
    context = models.JSONField(default=dict, blank=True)
    provisioned_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return self.name


class Repository(models.Model):
    class Status(models.TextChoices):
        NEW = "new"
        INGESTED = "ingested"
        ANALYSED = "analysed"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="repositories")
    name = models.CharField(max_length=200)
    url = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="What git fetches: https://, ssh://, git@host:path, file:// or a local path. "
        "A credential in it is stored encrypted; the URL keeps *** in its place.",
    )
    # The credential taken out of ``url`` (user:token), encrypted; see workspaces.credentials.
    credential = models.TextField(blank=True, default="", editable=False)
    full_name = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="owner/name on the code host; read from the URL when empty.",
    )
    # Without a URL, ingest reads a local folder, or else ``metadata["files"]``.
    local_path = models.CharField(max_length=500, blank=True, default="")
    # Stored metadata: {"files": {path: text}}, {"pull_requests": [...]}, {"checks": {...}}.
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    primary_language = models.CharField(max_length=50, blank=True, default="")
    kind = models.CharField(
        max_length=50, blank=True, default="", help_text="Classification, e.g. django-app."
    )
    file_count = models.PositiveIntegerField(default=0)
    line_count = models.PositiveIntegerField(default=0)
    languages = models.JSONField(default=dict, blank=True)
    paths = models.JSONField(default=list, blank=True)
    findings = models.JSONField(default=list, blank=True)
    ingested_at = models.DateTimeField(null=True, blank=True)
    # What the last fetch checked out, and why the last ingest failed ("" when it did not).
    commit_sha = models.CharField(max_length=64, blank=True, default="")
    branch = models.CharField(max_length=200, blank=True, default="")
    ingest_error = models.TextField(blank=True, default="")
    # The code host's sync cursors: ETags of the last answers and the newest updated_at seen.
    host_state = models.JSONField(default=dict, blank=True)
    pulls_synced_at = models.DateTimeField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    architecture = models.JSONField(default=dict, blank=True)
    analysed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        # A credential typed into the URL is never stored in clear (see workspaces.credentials).
        from workspaces import credentials

        url, secret = credentials.split_url(self.url)
        if secret:
            self.url, self.credential = url, credentials.encrypt(secret)
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "url", "credential"}
        super().save(*args, **kwargs)


class PullRequest(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        MERGED = "merged"
        CLOSED = "closed"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="pull_requests")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True, default="")
    author = models.CharField(max_length=100, blank=True, default="")
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    head_sha = models.CharField(max_length=64, blank=True, default="")
    changed_files = models.JSONField(default=list, blank=True)
    # Diff stats as the host reports them (known for pull requests read one by one).
    additions = models.PositiveIntegerField(null=True, blank=True)
    deletions = models.PositiveIntegerField(null=True, blank=True)
    merged_at = models.DateTimeField(null=True, blank=True)
    updated_at_host = models.DateTimeField(null=True, blank=True)
    # Supervised pull requests get their CI results and approvals recorded by checks.sync.
    supervised = models.BooleanField(default=False)
    ci_status = models.CharField(max_length=20, blank=True, default="")
    checks = models.JSONField(default=list, blank=True)
    approvals = models.JSONField(default=list, blank=True)
    checks_observed_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "number"], name="workspaces_pr_number"),
        ]

    def __str__(self) -> str:
        return f"{self.repository} #{self.number}"


class WorkConnection(models.Model):
    """A project, list or board of a work tracker that ``workmanagement.sync`` mirrors into
    source items. Its API token is stored encrypted and never shown (see the admin)."""

    class Kind(models.TextChoices):
        JIRA = "jira", "Jira"
        CLICKUP = "clickup", "ClickUp"
        MONDAY = "monday", "Monday"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="work_connections")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=200)
    external_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Jira: the project key. ClickUp: the list id. Monday: the board id.",
    )
    api_url = models.CharField(
        "API address",
        max_length=300,
        blank=True,
        default="",
        help_text="Jira: the site, e.g. https://acme.atlassian.net. "
        "ClickUp and Monday: leave empty for their public API.",
    )
    account = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Jira: the email address of the Atlassian account the API token belongs to.",
    )
    # The API token, encrypted with CREDENTIALS_KEYS (workspaces.credentials). Written through
    # the admin's write-only field; never shown, logged or put in a job's payload.
    credential = models.TextField(blank=True, default="", editable=False)
    webhook_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="ClickUp: the id of the webhook registered for this list; its deliveries name it.",
    )
    active = models.BooleanField(default=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # The last full listing, which is what finds deleted items; None asks the next sync for one.
    full_synced_at = models.DateTimeField(null=True, blank=True)
    # Where incremental syncs resume: {"updated_since": ISO time}. Written by the sync only.
    sync_state = models.JSONField(default=dict, blank=True)
    # What the last sync did, and the items mirrored after it (deleted ones not counted).
    last_sync_counts = models.JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    # Why the last sync did not finish ("" after one that did).
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    # The embedded default's items (WORK_TRACKER=stored, the demo): what the stored-snapshot
    # tracker reads instead of a provider. Connections synced from a provider ignore it.
    snapshot = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [
            # The reconcile timer: active connections by last sync.
            models.Index(
                fields=["last_synced_at"], condition=models.Q(active=True), name="workspaces_conn_reconcile"
            ),
            # Webhooks: the connections a delivery names (Jira project, Monday board).
            models.Index(fields=["kind", "external_id"], name="workspaces_conn_external"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.name}"

    def save(self, *args, **kwargs) -> None:
        # Webhooks find a connection by its external id, exactly (the index serves that): Jira
        # names projects by their upper-case key, so a key typed in lower case is stored upper.
        self.external_id = self.external_id.strip()
        if self.kind == self.Kind.JIRA:
            self.external_id = self.external_id.upper()
        super().save(*args, **kwargs)


class SourceItem(models.Model):
    """A work item (issue, task, board item) mirrored from a work connection.

    An item the provider no longer lists (deleted, archived, moved away) is kept with
    ``deleted_at`` set, and comes back to life if the provider lists it again.
    """

    connection = models.ForeignKey(WorkConnection, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    title = models.CharField(max_length=500)
    status = models.CharField(max_length=100, blank=True, default="")
    description = models.TextField(blank=True, default="")
    url = models.CharField(max_length=500, blank=True, default="")
    updated_at_source = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(db_default=Now())
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["connection", "external_id"], name="workspaces_item_external_id"),
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.title}"


class WebhookDelivery(models.Model):
    """One verified webhook delivery and what it led to, for an operator asking why something
    did or did not sync. A delivery id is recorded once: the same delivery again (a replay,
    a redelivery) is answered without queuing anything and counted in ``repeats``.
    Pruned after ``WEBHOOK_DELIVERIES_KEEP_DAYS``."""

    class Provider(models.TextChoices):
        GITHUB = "github", "GitHub"
        JIRA = "jira", "Jira"
        CLICKUP = "clickup", "ClickUp"
        MONDAY = "monday", "Monday"

    class Outcome(models.TextChoices):
        QUEUED = "queued"  # one job or more queued (or already queued for the same subject)
        IGNORED = "ignored"  # an event that needs no sync (a ping, another branch, ...)
        UNKNOWN = "unknown"  # no connected repository or active connection matches it

    provider = models.CharField(max_length=10, choices=Provider.choices)
    delivery_id = models.CharField(max_length=200)
    event = models.CharField(max_length=100, blank=True, default="")
    received_at = models.DateTimeField(db_default=Now())
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    detail = models.CharField(max_length=500, blank=True, default="")
    # The ids of the jobs it queued (or found queued), for the admin's links.
    job_ids = models.JSONField(default=list, blank=True)
    repeats = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [
            # Replays: the second insert of a delivery id fails, and nothing is queued.
            models.UniqueConstraint(fields=["provider", "delivery_id"], name="workspaces_delivery_once"),
        ]
        indexes = [
            # The admin's list (newest first) and pruning (oldest first).
            models.Index(fields=["received_at"], name="workspaces_delivery_received"),
        ]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} {self.event} {self.delivery_id}"


class WebhookToken(models.Model):
    """A signed token (monday's JWT) as first seen on a delivery: until it expires it is
    accepted again only with the same body (the provider's retry), so one captured token
    cannot carry other bodies. Pruned with the deliveries once expired."""

    provider = models.CharField(max_length=10, choices=WebhookDelivery.Provider.choices)
    token_sha256 = models.CharField(max_length=64)
    body_sha256 = models.CharField(max_length=64)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            # Two deliveries racing with one token: the second insert fails and reads the first.
            models.UniqueConstraint(fields=["provider", "token_sha256"], name="workspaces_token_once"),
        ]
        indexes = [
            # Pruning the expired ones.
            models.Index(fields=["expires_at"], name="workspaces_token_expires"),
        ]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} token {self.token_sha256[:12]}"


class AIArtifact(models.Model):
    """What an AI run produced, with the prompt and output bodies kept for the retention window."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="artifacts")
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, null=True, blank=True, related_name="artifacts"
    )
    pull_request = models.ForeignKey(
        PullRequest, on_delete=models.CASCADE, null=True, blank=True, related_name="artifacts"
    )
    kind = models.CharField(max_length=50, help_text="The workflow or job that made it.")
    # Who wrote the output: "local" is the extractive digest, written by no model.
    provider = models.CharField(max_length=20, blank=True, default="")
    model = models.CharField(max_length=100, blank=True, default="")
    # What the call cost, as the provider reported it (None: not a model, or not reported).
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt = models.TextField(blank=True, default="")
    output = models.TextField(blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    bodies_purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "AI artifact"
        indexes = [
            # retention.purge: artifacts whose bodies are still kept, oldest first.
            models.Index(
                fields=["created_at"],
                condition=models.Q(bodies_purged_at__isnull=True),
                name="workspaces_art_kept",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"

    @property
    def written_by_model(self) -> bool:
        return self.provider != "local"


class Decision(models.Model):
    """A decision proposed by decisions.mine from the workspace record, for a human to confirm,
    with the statements it rests on (its evidence)."""

    class Status(models.TextChoices):
        PROPOSED = "proposed"
        ACCEPTED = "accepted"
        REJECTED = "rejected"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="decisions")
    title = models.CharField(max_length=500)
    source = models.CharField(max_length=200, help_text="Where it was found, e.g. 'pr:12' or 'item:PROJ-3'.")
    # A hash of the statements it rests on, so mining the same record twice proposes nothing new.
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    # [{"source": "pr:3#12", "quote": "We decided to …", "fingerprint": "…"}]: the statements
    # the regex pass found in the record, quoted as they stand.
    evidence = models.JSONField(default=list, blank=True)
    # The model call that proposed it; none when the local rules did.
    artifact = models.ForeignKey(
        AIArtifact, on_delete=models.SET_NULL, null=True, blank=True, related_name="decisions"
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "fingerprint"], name="workspaces_decision_once"),
        ]

    def __str__(self) -> str:
        return self.title


class ReviewCapsule(models.Model):
    """A review capsule for one merged pull request: what changed, its evidence, a summary."""

    pull_request = models.OneToOneField(PullRequest, on_delete=models.CASCADE, related_name="capsule")
    summary = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"Capsule for {self.pull_request}"
