"""Parsing, conversion and classification without a database."""

from __future__ import annotations

import json

import pytest

from pipeline import classify, convert, parsing
from pipeline.errors import ModelCallError
from tests.pipeline import corpus


def test_summary__plain_email_gives_message_id_sender_and_subject():
    assert parsing.summary(corpus.plain()) == parsing.Summary(
        message_id="<plain-1@example.com>",
        sender="Alice <alice@example.com>",
        subject="Invoice 42 for November",
    )


@pytest.mark.parametrize("case", corpus.awkward_headers(), ids=lambda case: case.name)
def test_summary__awkward_headers_are_decoded_unfolded_or_left_empty(case):
    assert parsing.summary(case.raw) == parsing.Summary(case.message_id, case.sender, case.subject)


@pytest.mark.parametrize(
    "raw",
    [case.raw for case in corpus.cases(huge=False)] + [case.raw for case in corpus.awkward_headers()],
    ids=[case.name for case in corpus.cases(huge=False)] + [case.name for case in corpus.awkward_headers()],
)
def test_summary__reading_the_headers_only_gives_what_a_full_read_gives(raw):
    assert parsing.summary(raw) == parsing.summarize(parsing.read(raw))


def test_parse__plain_email_gives_headers_and_body():
    parsed = parsing.parse(corpus.plain())
    assert "Payment due" in parsed.body_text
    assert ("Subject", "Invoice 42 for November") in parsed.headers
    assert parsed.defects == [] and parsed.attachments == []


def test_parse__html_only_email_is_turned_into_readable_text():
    text = parsing.parse(corpus.html_only()).body_text
    assert "Big news this week." in text
    assert "<p>" not in text and "color: red" not in text


def test_parse__attachments_are_converted_or_recorded_as_unconvertible():
    parts = {part.filename: part for part in parsing.parse(corpus.multipart_with_attachments()).attachments}
    assert "Quarterly revenue grew strongly" in parts["report.pdf"].text
    assert parts["agenda.html"].text == "Agenda: budget review"
    assert parts["logo.png"].text is None and "image/png" in parts["logo.png"].note


def test_parse__non_utf8_charsets_and_rfc2047_headers_are_decoded():
    latin = corpus.latin1()
    assert parsing.summary(latin).subject == "Rechnung für März"
    assert "Jürgen Müller" in parsing.summary(latin).sender
    assert "Grüße aus Köln" in parsing.parse(latin).body_text
    japanese = corpus.shift_jis_rfc2047()
    assert parsing.summary(japanese).subject == "会議の議題 meeting"
    assert "明日の会議" in parsing.parse(japanese).body_text


def test_parse__unknown_charset_is_read_as_utf8_with_a_defect():
    parsed = parsing.parse(corpus.unknown_charset())
    assert "help please" in parsed.body_text
    assert any("x-no-such-charset" in defect for defect in parsed.defects)


def test_parse__truncated_mime_is_parsed_as_far_as_possible():
    parsed = parsing.parse(corpus.truncated_mime())
    assert ("Subject", "Quarterly report and meeting agenda") in parsed.headers
    assert any("CloseBoundaryNotFound" in defect for defect in parsed.defects)
    assert [part.filename for part in parsed.attachments] == ["report.pdf"]
    assert parsed.attachments[0].text is None and "conversion failed" in parsed.attachments[0].note


def test_parse__garbage_bytes_never_raise():
    parsed = parsing.parse(corpus.garbage())
    assert parsed.defects
    assert "\x00" not in parsed.body_text


def test_normalise_message_id__strips_brackets_space_and_lowercases_the_domain():
    assert parsing.normalise_message_id(" <Abc.Def@Example.COM> ") == "<Abc.Def@example.com>"
    assert parsing.normalise_message_id("no-brackets@X.org") == "<no-brackets@x.org>"
    assert parsing.normalise_message_id("") == ""


def test_content_key__ignores_trace_headers_and_line_endings():
    raw = corpus.no_message_id()
    relayed = b"Received: from a by b\r\n\tfor <x@y>; today\r\nReturn-Path: <z@y>\r\n" + raw
    assert parsing.content_key(raw) == parsing.content_key(relayed)
    assert parsing.content_key(raw) == parsing.content_key(raw.replace(b"\r\n", b"\n"))
    assert parsing.content_key(raw) != parsing.content_key(raw.replace(b"Meeting", b"Meating"))


def test_html_to_text__skips_scripts_and_keeps_blocks_apart():
    html = "<div>one</div><script>alert(1)</script><p>two &amp; three</p>"
    assert convert.html_to_text(html) == "one\ntwo & three"


def test_classify_local__matches_keywords_deterministically(settings):
    settings.PIPELINE_CLASSIFIER_RULES = ""
    assert classify.classify_local("Invoice", "see agenda").labels == ["invoice", "meeting"]
    assert classify.classify_local("Hi", "nothing here").labels == ["other"]


def test_classify_local__rules_come_from_settings(settings):
    settings.PIPELINE_CLASSIFIER_RULES = json.dumps({"urgent": ["asap"]})
    assert classify.classify_local("Please ASAP", "").labels == ["urgent"]


def test_classify_local__bad_rules_name_the_setting(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.PIPELINE_CLASSIFIER_RULES = "{not json"
    with pytest.raises(ImproperlyConfigured, match="PIPELINE_CLASSIFIER_RULES"):
        classify.classify_local("a", "b")


@pytest.mark.parametrize(
    "answer",
    [
        "not json",
        "[]",
        '{"labels": []}',
        '{"labels": "invoice"}',
        '{"labels": ["Has Space"]}',
        '{"tags": ["a"]}',
    ],
)
def test_validate_answer__rejects_anything_but_the_agreed_shape(answer):
    with pytest.raises(ModelCallError):
        classify.validate_answer(answer)


def test_validate_answer__accepts_the_agreed_shape():
    assert classify.validate_answer('{"labels": ["support", "invoice", "support"]}') == ["invoice", "support"]


# --- hostile input ----------------------------------------------------------------------------


def _storable(value: str) -> bool:
    return "\x00" not in value and not any("\ud800" <= char <= "\udfff" for char in value)


def _strings(parsed: parsing.Parsed) -> list[str]:
    found = [parsed.body_text, *parsed.defects, *(value for item in parsed.headers for value in item)]
    for part in parsed.attachments:
        found += [part.filename, part.content_type, part.note, part.text or ""]
    return found


@pytest.mark.parametrize("name", sorted(corpus.bogus_charsets()))
def test_parse__bogus_charsets_and_nul_are_decoded_defensively_into_storable_text(name):
    raw = corpus.bogus_charsets()[name]
    parsed = parsing.parse(raw)
    assert "help" in parsed.body_text
    assert all(_storable(value) for value in _strings(parsed))
    assert all(_storable(value) for value in vars(parsing.summary(raw)).values())


@pytest.mark.parametrize(
    "name", ["undefined", "idna", "nul_in_charset", "base64_undefined", "escape_codec_body"]
)
def test_parse__a_charset_that_cannot_decode_text_is_read_as_utf8_and_noted(name):
    parsed = parsing.parse(corpus.bogus_charsets()[name])
    assert "please help" in parsed.body_text
    assert any("charset" in defect for defect in parsed.defects)


def test_parse__attachment_names_are_storable():
    parts = parsing.parse(corpus.bogus_charsets()["attachment_nul_names"]).attachments
    # NUL dropped, each byte of the UTF-8 encoded surrogate replaced.
    assert [part.filename for part in parts] == ["na\ufffd\ufffd\ufffdme.txt"]
    assert "Grüße" in parts[0].text


def test_parse__mime_nesting_up_to_the_limit_is_read(settings):
    settings.PIPELINE_MAX_MIME_DEPTH = 50
    parsed = parsing.parse(corpus.nested(49))  # 49 multiparts and the text part: 50 levels
    assert parsed.body_text == "the innermost part"


def test_parse__mime_nested_deeper_than_the_limit_fails_for_good_naming_the_setting(settings):
    from jobs import PermanentError
    from pipeline.errors import UnprocessableEmail

    settings.PIPELINE_MAX_MIME_DEPTH = 50
    for depth in (50, 3000):
        with pytest.raises(UnprocessableEmail, match="PIPELINE_MAX_MIME_DEPTH") as caught:
            parsing.parse(corpus.nested(depth))
        assert isinstance(caught.value, PermanentError)


def test_parse__more_parts_than_the_limit_fail_for_good_naming_the_setting(settings):
    from pipeline.errors import UnprocessableEmail

    settings.PIPELINE_MAX_MIME_PARTS = 10
    assert len(parsing.parse(corpus.many_parts(9)).attachments) == 9  # and the container: 10 parts
    with pytest.raises(UnprocessableEmail, match="PIPELINE_MAX_MIME_PARTS"):
        parsing.parse(corpus.many_parts(10))


def test_summary__headers_are_read_whatever_the_body_holds(settings):
    settings.PIPELINE_MAX_MIME_PARTS = 10
    settings.PIPELINE_MAX_MIME_DEPTH = 5
    assert parsing.summary(corpus.many_parts(100)).subject == "many parts"
    assert parsing.summary(corpus.nested(100)).subject == "nested"


# --- PDF: bounded work ------------------------------------------------------------------------


def test_pdf__only_the_first_pages_up_to_the_limit_are_read(settings):
    settings.PIPELINE_PDF_MAX_PAGES = 2
    data = corpus.pdf([corpus.text_stream(f"page {n}") for n in range(5)], [0, 1, 2, 3, 4])
    text, note = convert.to_text("application/pdf", data)
    assert text == "page 0\npage 1"
    assert "first 2 of 5 pages" in note and "PIPELINE_PDF_MAX_PAGES" in note


def test_pdf__pages_sharing_a_content_stream_are_read_once():
    data = corpus.pdf([corpus.text_stream("shared words"), corpus.text_stream("own words")], [0, 0, 1, 0])
    text, note = convert.to_text("application/pdf", data)
    assert text == "shared words\nown words"
    assert "2 pages repeat" in note


def test_pdf__extraction_stops_at_the_text_limit():
    data = corpus.pdf([corpus.text_stream(*(f"line {n:04d}" for n in range(50)))], [0])
    text, note = convert.to_text("application/pdf", data, limit=25)
    assert text == "line 0000\nline 0001\nline "
    assert "text limit" in note


def test_pdf__a_page_over_the_token_budget_is_skipped_and_the_others_are_read(settings):
    settings.PIPELINE_PDF_PAGE_TOKENS = 1000
    heavy = b"1 0 0 1 0 0 cm\n" * 1000 + corpus.text_stream("hidden")
    data = corpus.pdf([corpus.text_stream("first"), heavy, corpus.text_stream("last")], [0, 1, 2])
    text, note = convert.to_text("application/pdf", data)
    assert text == "first\nlast"
    assert "page 2" in note and "PIPELINE_PDF_PAGE_TOKENS" in note


def test_parse__text_is_kept_up_to_the_limit_per_email(settings):
    settings.PIPELINE_MAX_TEXT = 60
    parsed = parsing.parse(corpus.multipart_with_attachments())
    kept = len(parsed.body_text) + sum(len(part.text or "") for part in parsed.attachments)
    assert parsed.body_text == "See the attached report and agenda.\r\n"
    assert kept == 60
    report, agenda, _ = parsed.attachments
    assert report.text == "Quarterly revenue grew strongly"[: 60 - len(parsed.body_text)]
    assert "text limit" in report.note
    assert agenda.text is None and "PIPELINE_MAX_TEXT" in agenda.note
