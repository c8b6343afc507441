"""The email index's chunks, without a database: how an email's text is cut (overlap,
cuts on whitespace, a text with none), that no more than ``PIPELINE_MAX_TEXT`` of an email
reaches them, and that a chunk's point id depends on the email and the chunk only."""

from __future__ import annotations

import random
from email.message import EmailMessage as MimeMessage

import pytest

from pipeline import chunking, indexing, parsing, vector_store
from pipeline.models import EmailMessage

SIZE, OVERLAP = 100, 20


def _words(count: int, seed: int = 7) -> str:
    """Words of 2 to 12 characters, each different (so a chunk is found at one place only)."""
    rng = random.Random(seed)
    return " ".join(f"w{n}" + "x" * rng.randrange(0, 9) for n in range(count))


def _offsets(text: str, pieces: list[str]) -> list[int]:
    """Where each chunk starts in the text, in order."""
    found: list[int] = []
    for piece in pieces:
        found.append(text.index(piece, found[-1] + 1 if found else 0))
    return found


def test_chunks__each_starts_the_overlap_before_the_previous_one_ended_and_they_cover_the_text():
    text = _words(400)
    pieces = chunking.chunks(text, SIZE, OVERLAP)
    starts = _offsets(text, pieces)
    ends = [start + len(piece) for start, piece in zip(starts, pieces, strict=True)]

    assert len(pieces) > 5 and all(len(piece) <= SIZE for piece in pieces)
    assert starts[0] == 0 and ends[-1] == len(text)
    for end, piece, start, following in zip(ends, pieces, starts[1:], pieces[1:], strict=False):
        # The next chunk starts OVERLAP characters back (or just after, had it started on a space).
        skipped = text[end - OVERLAP : start]
        assert start == end - OVERLAP or (start - (end - OVERLAP) == 1 and skipped.isspace())
        assert following.startswith(text[start:end]) and piece.endswith(text[start:end])


def test_chunks__cut_on_whitespace_where_there_is_some():
    text = _words(400, seed=11).replace(" w1", "\nw1")  # line breaks count as whitespace too
    pieces = chunking.chunks(text, SIZE, OVERLAP)
    starts = _offsets(text, pieces)

    for start, piece in zip(starts[:-1], pieces[:-1], strict=True):
        end = start + len(piece)
        assert text[end].isspace(), f"cut inside a word: …{text[end - 10 : end + 10]!r}"
    whole_words = set(text.split())
    assert all(piece.split()[-1] in whole_words for piece in pieces)  # no chunk ends mid-word


def test_chunks__a_text_without_whitespace_is_still_cut_at_the_size():
    text = "".join(str(n) for n in range(300))  # 790 characters, not one space
    pieces = chunking.chunks(text, SIZE, OVERLAP)

    assert [len(piece) for piece in pieces[:-1]] == [SIZE] * (len(pieces) - 1)
    assert 0 < len(pieces[-1]) <= SIZE
    for piece, following in zip(pieces, pieces[1:], strict=False):
        assert following[:OVERLAP] == piece[-OVERLAP:]
    assert pieces[0] + "".join(piece[OVERLAP:] for piece in pieces[1:]) == text


@pytest.mark.parametrize("text", ["", "   \n\t  "])
def test_chunks__an_empty_or_blank_text_has_none(text):
    assert chunking.chunks(text, SIZE, OVERLAP) == []


def test_chunks__of_an_email_over_the_text_limit_hold_no_more_than_the_limit(settings):
    """Body and attachments are cut at PIPELINE_MAX_TEXT before they are chunked: a word
    past the limit, in the body or in an attachment after it, is in no chunk."""
    settings.PIPELINE_MAX_TEXT = 3_000
    settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP = SIZE, OVERLAP
    mime = MimeMessage()
    mime["From"], mime["Subject"] = "ada@example.com", "Quarterly figures"
    mime.set_content(_words(600) + " bodytailpastthelimit")  # about 4,600 characters
    mime.add_attachment("attachmentwordpastthelimit " * 50, subtype="plain", filename="notes.txt")
    parsed = parsing.parse(mime.as_bytes())
    email = EmailMessage(subject="Quarterly figures")
    text = indexing.joined_text(parsed.body_text, [(a.filename, a.text or "") for a in parsed.attachments])

    embedded = indexing.meaning_text(email, text)
    pieces = chunking.chunks(embedded, settings.EMBEDDING_CHUNK_CHARS, settings.EMBEDDING_CHUNK_OVERLAP)

    starts = _offsets(embedded, pieces)
    covered = starts[-1] + len(pieces[-1]) - starts[0]  # the chunks follow one another
    assert settings.PIPELINE_MAX_TEXT * 0.9 < covered <= len(email.subject) + 1 + settings.PIPELINE_MAX_TEXT
    assert not any("pastthelimit" in piece for piece in pieces)


def test_point_ids__depend_on_the_email_and_the_chunk_only():
    """A retry or a reprocess writes chunk n of an email at the same point, in any process
    (a uuid5, not Python's salted hash), so Qdrant overwrites it rather than adding one."""
    assert vector_store.point_id(42, 0) == "0e3619ac-881b-57d7-b38b-b6c1a00237a3"
    assert vector_store.point_id(42, 0) == vector_store.point_id(42, 0)
    ids = {vector_store.point_id(email_id, chunk) for email_id in (42, 43) for chunk in (0, 1, 2)}
    assert len(ids) == 6
    text = _words(400)
    assert chunking.chunks(text, SIZE, OVERLAP) == chunking.chunks(text, SIZE, OVERLAP)
