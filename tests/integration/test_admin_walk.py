"""No admin page answers a server error: every registered model's list, add form (GET, and
the empty form posted back, where adding is offered) and one object's change page, as a
superuser. A model registered later is walked too, or the walk fails for want of a row."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory

from tests.support.admin_walk import one_of_each, pages

pytestmark = pytest.mark.django_db


def test_walk__no_admin_page_answers_a_server_error(client) -> None:
    superuser = User.objects.create_superuser("ops", "ops@example.com", "pw-for-tests")
    client.raise_request_exception = False  # a server error is an answer the walk records
    client.force_login(superuser)
    rows = one_of_each()
    request = RequestFactory().get("/admin/")
    request.user = superuser

    answers = {}
    for page in pages(rows, request):
        answers[str(page)] = client.get(page.url).status_code
        if page.kind in ("add", "change"):
            answers[f"empty POST of {page}"] = client.post(page.url, {}).status_code

    errors = {page: status for page, status in answers.items() if status >= 500}
    assert errors == {}
    assert len(answers) >= 3 * 20, "the walk should reach every registered model"


def test_admin_index__leaves_out_django_q2s_task_lists_but_keeps_its_schedules(
    admin_client, settings
) -> None:
    """django-q2 only runs the timers here: its task lists would always be empty."""
    index = admin_client.get("/admin/").text

    assert "/admin/django_q/schedule/" in index
    for hidden in ("success", "failure", "ormq"):
        assert f"/admin/django_q/{hidden}/" not in index
        assert admin_client.get(f"/admin/django_q/{hidden}/").status_code == 200  # still reachable
