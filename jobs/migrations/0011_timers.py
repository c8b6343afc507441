"""Timers as schedules in the database: a row per timer, a row per booked slot (unique per
timer and slot, the guarantee that a slot runs once)."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('platform', '0010_mariadb_indexes'),
    ]

    operations = [
        migrations.CreateModel(
            name='Timer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True)),
                ('every', models.PositiveIntegerField(blank=True, help_text='Seconds between slots.', null=True)),
                ('declared_every', models.PositiveIntegerField(blank=True, null=True)),
                ('cron', models.CharField(blank=True, default='', max_length=100)),
                ('timezone', models.CharField(default='UTC', max_length=64)),
                ('catch_up', models.CharField(default='once', max_length=4)),
                ('overlap', models.CharField(default='skip', max_length=5)),
                ('enabled', models.BooleanField(default=True, help_text='Off: paused, no slot is booked.')),
                ('declared', models.BooleanField(default=True, help_text='Still declared in the code.')),
                ('installed_at', models.DateTimeField()),
                ('last_slot', models.DateTimeField(blank=True, null=True)),
                ('last_success_slot', models.DateTimeField(blank=True, null=True)),
                ('last_success_at', models.DateTimeField(blank=True, null=True)),
                ('missed', models.PositiveIntegerField(default=0, help_text='Slots that got no run of their own.')),
                ('skipped', models.PositiveIntegerField(default=0, help_text='Slots skipped: the previous run still ran.')),
            ],
            options={
                'db_table': 'jobs_timer',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='TimerSlot',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slot', models.DateTimeField()),
                ('kind', models.CharField(choices=[('scheduled', 'Scheduled'), ('catch_up', 'catch-up'), ('manual', 'Manual')], default='scheduled', max_length=9)),
                ('outcome', models.CharField(choices=[('enqueued', 'Enqueued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('skipped', 'Skipped'), ('missed', 'Missed')], default='enqueued', max_length=9)),
                ('covers', models.PositiveIntegerField(default=1, help_text='Slots this row stands for.')),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('ran_in', models.CharField(blank=True, default='', help_text="A command's run: where.", max_length=200)),
                ('by', models.CharField(blank=True, default='', help_text='Who asked for a manual run.', max_length=150)),
                ('result', models.TextField(blank=True, default='')),
                ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.DB_SET_NULL, related_name='+', to='platform.job')),
                ('timer', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DB_CASCADE, related_name='slots', to='platform.timer')),
            ],
            options={
                'db_table': 'jobs_timer_slot',
                'ordering': ['timer', '-slot'],
                'indexes': [models.Index(fields=['timer', 'outcome'], name='jobs_timer_slot_outcome')],
                'constraints': [models.UniqueConstraint(fields=('timer', 'slot'), name='jobs_timer_slot_once')],
            },
        ),
    ]
