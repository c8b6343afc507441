"""The trial sweep: one email per trial ending within 3 days, however often and however
concurrently it runs."""

from __future__ import annotations

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from jobs.timers import timers
from tests.support.database import lock_waiters
from tests.support.waiting import wait_for
from workspaces.models import TrialReminder
from workspaces.services import trials

from .factories import OrganizationFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_trial_sweep__emails_organizations_whose_trial_ends_within_3_days():
    soon = OrganizationFactory(ending_soon=True, name="Acme", billing_email="owner@acme.test")
    OrganizationFactory()  # 14 days left
    OrganizationFactory(trial_ends_at=timezone.now() + timedelta(days=3, hours=1))
    OrganizationFactory(trial_ends_at=timezone.now() - timedelta(hours=1))  # already over
    OrganizationFactory(ending_soon=True, paid=True)

    assert trials.send_trial_reminders() == 1

    (message,) = mail.outbox
    assert message.to == ["owner@acme.test"]
    assert "Acme" in message.subject and "trial" in message.subject
    reminder = TrialReminder.objects.get()
    assert (reminder.organization_id, reminder.trial_ends_at) == (soon.pk, soon.trial_ends_at)


def test_trial_sweep__sends_once_per_trial_and_again_for_an_extended_trial():
    org = OrganizationFactory(ending_soon=True)
    out = StringIO()
    call_command("trial_sweep", stdout=out)
    call_command("trial_sweep", "--force", stdout=out)  # the same slot again, as a slot of its own
    assert len(mail.outbox) == 1
    assert "1 trial reminders sent" in out.getvalue() and "0 trial reminders sent" in out.getvalue()

    org.trial_ends_at = org.trial_ends_at + timedelta(days=1)  # a new trial end, still within 3 days
    org.save()
    assert trials.send_trial_reminders() == 1
    assert trials.send_trial_reminders() == 0
    assert len(mail.outbox) == 2


def test_trial_sweep__a_failed_send_is_retried_by_the_next_sweep(monkeypatch):
    org = OrganizationFactory(ending_soon=True)

    def refuse(**kwargs):
        raise ConnectionRefusedError("SMTP is down")

    monkeypatch.setattr(trials, "send_mail", refuse)
    assert trials.send_trial_reminders() == 0
    assert not TrialReminder.objects.exists()

    monkeypatch.undo()
    assert trials.send_trial_reminders() == 1
    assert TrialReminder.objects.get().organization_id == org.pk


def test_trial_sweep__two_sweeps_at_once_send_one_email(monkeypatch):
    OrganizationFactory(ending_soon=True)
    inside_send, release = threading.Event(), threading.Event()
    real_send = trials.send_mail

    def slow_send(**kwargs):
        inside_send.set()
        release.wait(timeout=20)  # hold the uncommitted reminder row while the other sweep runs
        return real_send(**kwargs)

    monkeypatch.setattr(trials, "send_mail", slow_send)
    sent: list[int] = []

    def sweep() -> None:
        try:
            sent.append(trials.send_trial_reminders())
        finally:
            connection.close()

    first = threading.Thread(target=sweep)
    first.start()
    try:
        wait_for(inside_send.is_set, message="the first sweep to start sending")
        second = threading.Thread(target=sweep)
        second.start()
        # The second sweep does not see the uncommitted reminder, tries to insert the same
        # (organization, trial end) pair and waits on the unique index.
        wait_for(lock_waiters, message="the second sweep to wait on the reminder row")
    finally:
        release.set()
    first.join(timeout=30)
    second.join(timeout=30)

    assert sorted(sent) == [0, 1]
    assert len(mail.outbox) == 1
    assert TrialReminder.objects.count() == 1


def test_trial_sweep_timer__is_hourly():
    (step,) = timers()["trial_sweep"]
    assert step.every == 3600
