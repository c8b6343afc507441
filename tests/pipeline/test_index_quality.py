"""The embedded model is a model, not a stand-in: on a labelled set of emails (the demo
mails and more: invoices, newsletters, meeting notes, shipping notices, English and German)
indexed through the real pipeline, an email's nearest neighbour shares its label for at
least 80 % of them, and queries sharing no word with their targets find them in the top 3.

Vectors of noise, and a bag-of-words hash of the text, fail the same test (xfail, strict: if
either passed, the test would have no teeth)."""

from __future__ import annotations

import pytest

from language_models import embeddings
from tests.pipeline import labelled_mail
from tests.pipeline.labelled_mail import MAILS, QUERIES, words

pytestmark = pytest.mark.django_db


def _assert_quality() -> None:
    quality = labelled_mail.evaluate()
    print(quality)
    assert quality.neighbour_share >= 0.80, quality
    assert quality.queries_missed == [], quality


def test_quality__the_queries_share_no_word_with_the_emails_they_should_find():
    for query in QUERIES:
        targets = [mail for mail in MAILS if mail.label == query.label]
        assert targets
        assert [m.subject for m in targets if words(query.text) & words(f"{m.subject} {m.body}")] == []


def test_quality__the_embedded_model_finds_neighbours_and_meanings():
    _assert_quality()


@pytest.mark.parametrize("control", ["random_vectors", "word_hash_vectors"])
@pytest.mark.xfail(strict=True, reason="vectors that know no meaning must fail the quality test")
def test_quality__fails_with_vectors_that_know_no_meaning(control: str, monkeypatch):
    fake = getattr(labelled_mail, control)(embeddings.current_model().dimensions)
    monkeypatch.setattr(embeddings, "embed_documents", fake)
    monkeypatch.setattr(embeddings, "embed_query", lambda text: fake([text])[0])
    _assert_quality()
