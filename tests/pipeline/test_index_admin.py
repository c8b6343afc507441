"""The email index in the admin: "Similar emails" on an email's page, the list's search by
words and meaning (each row saying why it matched; words only when the index cannot be
reached), and the index's page with its state and "Re-index all" (change permission)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

import jobs
from pipeline import intake, process
from pipeline.models import EmailMessage
from tests.pipeline import corpus, labelled_mail
from tests.support.model_server import Reply
from tests.support.servers import closed_port_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests")
    client.force_login(user)
    return client


@pytest.fixture
def indexed() -> dict[str, EmailMessage]:
    """A few labelled emails, processed, and a copy of the first."""
    found = {}
    for number, mail in enumerate(labelled_mail.MAILS[::4]):
        email = intake.receive(labelled_mail.raw(mail, number)).email
        process.process_email(email.pk)
        found[mail.subject] = email
    return found


def test_email_page__lists_similar_emails_with_scores_and_links_but_not_its_copies(admin_client):
    original = intake.receive(corpus.plain()).email
    copy = intake.receive(corpus.duplicate_of_plain()).email
    other = intake.receive(corpus.multipart_with_attachments()).email
    for email in (original, copy, other):
        process.process_email(email.pk)
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[original.pk])).text
    similar = page[page.index('class="pl-similar"') :]
    similar = similar[: similar.index("</table>")]
    assert reverse("admin:pipeline_emailmessage_change", args=[other.pk]) in similar
    assert f"#{copy.pk} " not in similar and f"#{original.pk} " not in similar
    assert "1 chunk(s) in emails_local_wordllama-l2-supercat_256" in page


def test_email_page__says_when_the_index_cannot_be_read(admin_client, settings):
    email = intake.receive(corpus.plain()).email
    process.process_email(email.pk)
    settings.QDRANT_URL, settings.QDRANT_TIMEOUT = closed_port_url(), 0.5
    page = admin_client.get(reverse("admin:pipeline_emailmessage_change", args=[email.pk]))
    assert page.status_code == 200
    assert "The vector index cannot be read now: Qdrant server at http://127.0.0.1" in page.text


def test_list_search__merges_words_and_meaning_and_says_why_each_row_matched(admin_client, indexed):
    url = reverse("admin:pipeline_emailmessage_changelist")
    page = admin_client.get(url, {"q": "parcel on its way"})
    assert page.status_code == 200
    rows = list(page.context["cl"].result_list)
    assert 0 < len(rows) < len(indexed)  # the far ones are left out
    assert all(row.match_score > 0 and not row.match_words for row in rows)
    labels = {mail.subject: mail.label for mail in labelled_mail.MAILS}
    assert labelled_mail.SHIPPING in [labels[row.subject] for row in rows[:3]]
    assert [row.match_rank for row in rows] == sorted((row.match_rank for row in rows), reverse=True)
    assert "why it matched" in page.text.lower() and "meaning 0." in page.text

    both = admin_client.get(url, {"q": "invoice"}).context["cl"].result_list
    first = both[0]
    assert first.match_words and first.match_score > 0  # a word match that is also near: first
    assert "invoice" in first.subject.lower()


def test_list_search__falls_back_to_words_when_the_index_cannot_be_reached(admin_client, indexed, settings):
    settings.QDRANT_URL, settings.QDRANT_TIMEOUT = closed_port_url(), 0.5
    page = admin_client.get(reverse("admin:pipeline_emailmessage_changelist"), {"q": "invoice"}, follow=True)
    rows = list(page.context["cl"].result_list)
    assert rows and all(row.match_words and not row.match_score for row in rows)
    assert "Search by meaning is not available now, only by words" in page.text


def test_index_page__shows_model_collection_points_and_partially_indexed_emails(
    admin_client, indexed, settings, model_server
):
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "test-embedding"
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_DIMENSIONS = model_server.openai_url, 8
    model_server.responder = lambda received: Reply.error(503, "down")
    partial = intake.receive(corpus.latin1()).email
    process.process_email(partial.pk)
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS = (
        "local",
        "wordllama-l2-supercat",
        256,
    )

    page = admin_client.get(reverse("admin:pipeline_vectorrecord_changelist")).text
    assert "static embedding model shipped inside the wordllama package" in page
    assert "(embedded default)" in page and "emails_local_wordllama-l2-supercat_256" in page
    assert f"<tr><th>points</th><td>{len(indexed)}</td></tr>" in page
    assert "Partially indexed emails (1)" in page
    table = page[page.index('id="partially-indexed"') :]
    assert f"#{partial.pk} " in table and "vectors" in table and "HTTP 503" in table


def test_reindex_all__queues_one_rebuild_job_for_the_change_permission_only(admin_client, client, indexed):
    url = reverse("admin:pipeline_vectorrecord_rebuild")
    assert admin_client.get(url).status_code == 405
    answer = admin_client.post(url, follow=True)
    job = jobs.active_job("index.rebuild")
    assert job is not None and job.queue == "index" and "since" in job.payload
    assert f"job #{job.pk}" in answer.text
    admin_client.post(url)
    assert jobs.jobs_for("index.rebuild").count() == 1  # pressing twice gives one job

    viewer = get_user_model().objects.create_user("viewer", password="pw-for-tests", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_vectorrecord"))
    client.force_login(viewer)
    page = client.get(reverse("admin:pipeline_vectorrecord_changelist"))
    assert page.status_code == 200 and 'id="rebuild"' not in page.text
    assert client.post(url).status_code == 403
