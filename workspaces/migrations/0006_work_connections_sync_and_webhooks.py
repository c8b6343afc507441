"""Work connections keep what a sync needs and did (provider address, account, encrypted
token, webhook id, incremental cursor, last full listing, counts, last error); source items
are marked deleted instead of removed; webhook deliveries are recorded once per delivery id.
Existing rows need nothing: every new field has its default, and a connection with no full
listing gets one on its next sync."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('workspaces', '0005_repositories_fetched_with_git'),
    ]

    operations = [
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('provider', models.CharField(choices=[('github', 'GitHub'), ('jira', 'Jira'), ('clickup', 'ClickUp'), ('monday', 'Monday')], max_length=10)),
                ('delivery_id', models.CharField(max_length=200)),
                ('event', models.CharField(blank=True, default='', max_length=100)),
                ('received_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('outcome', models.CharField(choices=[('queued', 'Queued'), ('ignored', 'Ignored'), ('unknown', 'Unknown')], max_length=10)),
                ('detail', models.CharField(blank=True, default='', max_length=500)),
                ('job_ids', models.JSONField(blank=True, default=list)),
                ('repeats', models.PositiveIntegerField(default=0)),
            ],
            options={
                'verbose_name_plural': 'webhook deliveries',
            },
        ),
        migrations.AddField(
            model_name='sourceitem',
            name='deleted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='account',
            field=models.CharField(blank=True, default='', help_text='Jira: the email address of the Atlassian account the API token belongs to.', max_length=200),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='api_url',
            field=models.CharField(blank=True, default='', help_text='Jira: the site, e.g. https://acme.atlassian.net. ClickUp and Monday: leave empty for their public API.', max_length=300, verbose_name='API address'),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='credential',
            field=models.TextField(blank=True, default='', editable=False),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='full_synced_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='item_count',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='last_error',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='last_error_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='last_sync_counts',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='sync_state',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='workconnection',
            name='webhook_id',
            field=models.CharField(blank=True, default='', help_text='ClickUp: the id of the webhook registered for this list; its deliveries name it.', max_length=200),
        ),
        migrations.AlterField(
            model_name='workconnection',
            name='external_id',
            field=models.CharField(blank=True, default='', help_text='Jira: the project key. ClickUp: the list id. Monday: the board id.', max_length=200),
        ),
        migrations.AddIndex(
            model_name='workconnection',
            index=models.Index(fields=['kind', 'external_id'], name='workspaces_conn_external'),
        ),
        migrations.AddIndex(
            model_name='webhookdelivery',
            index=models.Index(fields=['received_at'], name='workspaces_delivery_received'),
        ),
        migrations.AddConstraint(
            model_name='webhookdelivery',
            constraint=models.UniqueConstraint(fields=('provider', 'delivery_id'), name='workspaces_delivery_once'),
        ),
    ]
