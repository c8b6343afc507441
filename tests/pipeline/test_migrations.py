"""The pipeline's data migrations, run backwards and forwards on PostgreSQL."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import connection

from pipeline.models import ErrorLogEntry

BEFORE_RENAME = "0002_search_gin"


@pytest.mark.django_db(transaction=True)
def test_error_log_rename__keeps_the_rows_and_the_permission_grants():
    call_command("migrate", "pipeline", BEFORE_RENAME, verbosity=0)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO pipeline_emailmessage (blob_name, size, sha256, message_id, sender, subject, "
                "source, status, needs_review, labels) "
                "VALUES ('emails/x.eml', 1, %s, '', '', '', '', 'failed', false, '[]') RETURNING id",
                ["a" * 64],
            )
            email_id = cursor.fetchone()[0]
            cursor.execute(
                "INSERT INTO pipeline_pipelineerror (error_class, email_id, job_id, text) "
                "VALUES ('pipeline.errors.ModelCallError', %s, 7, 'timed out')",
                [email_id],
            )
        auditors = Group.objects.create(name="auditors")
        auditors.permissions.add(
            Permission.objects.get(content_type__app_label="pipeline", codename="view_pipelineerror")
        )
    finally:
        call_command("migrate", "pipeline", verbosity=0)

    entry = ErrorLogEntry.objects.get()
    assert (entry.email_id, entry.job_id, entry.text) == (email_id, 7, "timed out")
    assert list(auditors.permissions.values_list("codename", flat=True)) == ["view_errorlogentry"]
    assert not Permission.objects.filter(codename__endswith="_pipelineerror").exists()
    assert Permission.objects.filter(codename__endswith="_errorlogentry").count() == 4
