"""Dedupe keys of the workspace job types name their subject: "repository:7", not "7".

The types now derive their keys from the payload (``workspaces/tasks.py``). Rows written
before keep the bare id, and a queued or running one would not be found by the new key: a
second job for the same repository could be added beside it, and reconcile would not see
a pending sync. So the stored keys are rewritten, finished rows too, so that a subject's
history reads under one key. Only a key equal to its payload's id is touched, and an
active row whose prefixed twin is already active (enqueued by new code before this ran)
keeps its old key rather than break the unique index; it finishes as before.
"""

from django.db import migrations
from django.db.models import Exists, F, OuterRef, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Concat, Substr

# type: (payload field, prefix), as the types declared them when this was written.
KEYS = {
    "repository.ingest": ("repository_id", "repository:"),
    "repository.analyse": ("repository_id", "repository:"),
    "pullrequest.sync": ("repository_id", "repository:"),
    "checks.sync": ("repository_id", "repository:"),
    "brain.derive": ("repository_id", "repository:"),
    "capsules.retrospective": ("repository_id", "repository:"),
    "workmanagement.sync": ("connection_id", "connection:"),
    "decisions.mine": ("workspace_id", "workspace:"),
    "workspace.provision": ("workspace_id", "workspace:"),
    "retention.purge": ("organization_id", "organization:"),
}
ACTIVE = ["queued", "running"]


def prefix_keys(apps, schema_editor) -> None:
    Job = apps.get_model("platform", "Job")
    for type_name, (field, prefix) in KEYS.items():
        bare = Job.objects.filter(type=type_name, dedupe_key=KeyTextTransform(field, "payload"))
        twin_active = Job.objects.filter(
            type=type_name, status__in=ACTIVE, dedupe_key=Concat(Value(prefix), OuterRef("dedupe_key"))
        )
        bare.exclude(Exists(twin_active), status__in=ACTIVE).update(
            dedupe_key=Concat(Value(prefix), F("dedupe_key"))
        )


def strip_prefixes(apps, schema_editor) -> None:
    Job = apps.get_model("platform", "Job")
    for type_name, (field, prefix) in KEYS.items():
        subject = KeyTextTransform(field, "payload")
        prefixed = Job.objects.filter(type=type_name, dedupe_key=Concat(Value(prefix), subject))
        twin_active = Job.objects.filter(
            type=type_name, status__in=ACTIVE, dedupe_key=KeyTextTransform(field, OuterRef("payload"))
        )
        prefixed.exclude(Exists(twin_active), status__in=ACTIVE).update(
            dedupe_key=Substr("dedupe_key", len(prefix) + 1)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0001_initial"),
        ("platform", "0005_rare_status_index"),
    ]

    operations = [migrations.RunPython(prefix_keys, strip_prefixes, elidable=True)]
