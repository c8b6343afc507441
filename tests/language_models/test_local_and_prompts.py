"""The local digest, prompt rendering and answer reading: no model, no network, no database."""

from __future__ import annotations

import pytest

import language_models
from jobs import PermanentError, RetryableError
from language_models import InvalidAnswer, Prompt
from language_models.answers import parse_json

FACTS = tuple(f"Fact number {n}" for n in range(1, 16))


def test_local_digest__same_prompt_gives_the_same_text_and_says_no_model_wrote_it(settings):
    settings.MODEL_PROVIDER = "local"
    prompt = Prompt("repository.analyse", "Summarise it.", FACTS)
    first, second = language_models.complete(prompt), language_models.complete(prompt)
    assert first.text == second.text
    assert first.text.splitlines()[0] == (
        "Repository analyse: no model wrote this; an extractive digest of the recorded facts "
        "(MODEL_PROVIDER=local)."
    )
    assert (first.provider, first.model, first.input_tokens, first.output_tokens) == (
        "local",
        "local-digest",
        None,
        None,
    )
    assert not first.written_by_model


def test_local_digest__quotes_the_first_facts_and_counts_the_rest():
    text = language_models.digest(Prompt("test_plan", "Plan.", FACTS))
    assert text.splitlines()[1:] == [*(f"* Fact number {n}" for n in range(1, 13)), "* … and 3 more facts."]
    assert language_models.digest(Prompt("test_plan", "Plan.")).endswith("* Nothing was recorded to report.")


def test_local_provider__writes_no_json():
    with pytest.raises(language_models.ModelRejected):
        language_models.complete_json(Prompt("decisions.mine", "Answer in JSON."), dict)


def test_prompt__rendering_is_bounded_and_says_what_it_left_out():
    prompt = Prompt("x", "Instruction.", tuple("word " * 50 for _ in range(100)))
    text = prompt.render(2000)
    assert len(text) <= 2000 + 80
    assert text.splitlines()[-1].endswith("more facts left out to keep the prompt short)")
    assert text.startswith("Instruction.\n\n- word word")


def test_prompt__a_long_or_multi_line_fact_becomes_one_cut_line():
    text = Prompt("x", "I.", ("line one\nline two " + "y" * 1000,)).render(10_000)
    fact = text.splitlines()[-1]
    assert fact.startswith("- line one line two y") and fact.endswith("…") and len(fact) == 602


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"labels": ["a"]}', {"labels": ["a"]}),
        ('```json\n{"labels": ["a"]}\n```', {"labels": ["a"]}),
        ('  {"a": 1}\n', {"a": 1}),
    ],
)
def test_parse_json__reads_an_object_with_or_without_a_code_fence(text, value):
    assert parse_json(text) == value


@pytest.mark.parametrize("text", ["Sure! Here you go: labels", "[1, 2]", '{"a": '])
def test_parse_json__anything_else_is_an_invalid_answer(text):
    with pytest.raises(InvalidAnswer) as caught:
        parse_json(text)
    assert isinstance(caught.value, RetryableError)


def test_error_family__retryable_calls_and_permanent_refusals():
    assert issubclass(language_models.ModelTimeout, language_models.ModelCallError)
    assert issubclass(language_models.ModelRateLimited, RetryableError)
    assert issubclass(language_models.InvalidAnswer, RetryableError)
    assert issubclass(language_models.ModelRejected, PermanentError)
    from pipeline.errors import ModelCallError, ModelRateLimited

    assert issubclass(ModelCallError, language_models.ModelCallError)
    assert issubclass(ModelRateLimited, language_models.ModelRateLimited)
