"""Dedupe key templates: what a declaration may say, the key a payload gets, and the SQL
form used inside domain querysets. No database."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.models import OuterRef, Value
from django.db.models.functions import Concat

from jobs import InvalidPayload, job, registry
from jobs.keys import KeyTemplate


@pytest.mark.parametrize(
    "template",
    [
        "{email_id}",
        "{a}:{b}",
        "",
        "email:{email_id:05}",
        "email:{email_id!r}",
        "email:{email.id}",
        "email:{}",
    ],
    ids=["bare", "no-prefix", "empty", "spec", "conversion", "attribute", "positional"],
)
def test_template__needs_a_prefix_and_plain_fields(template):
    with pytest.raises(ImproperlyConfigured, match="Dedupe key"):
        KeyTemplate(template)


def test_template__a_bad_one_fails_at_declaration():
    with pytest.raises(ImproperlyConfigured, match="must start with a prefix"):
        job("unit.bare_key", dedupe="{repository_id}")
    assert "unit.bare_key" not in {t.name for t in registry.all_types()}


def test_render__puts_the_payloads_fields_after_the_prefix():
    assert KeyTemplate("email:{email_id}").render({"email_id": 7, "other": 1}) == "email:7"
    assert KeyTemplate("pr:{repository_id}/{number}").render({"repository_id": 3, "number": 12}) == "pr:3/12"
    assert KeyTemplate("sweep").render({}) == "sweep"
    assert KeyTemplate("sweep").fields == ()


def test_render__no_key_when_a_field_is_absent_or_none():
    template = KeyTemplate("organization:{organization_id}")
    assert template.render({}) is None
    assert template.render({"organization_id": None}) is None


@pytest.mark.parametrize("value", [True, 2.0, {"id": 1}])
def test_render__refuses_values_whose_text_differs_in_sql(value):
    with pytest.raises(InvalidPayload, match="must be an integer or a string"):
        KeyTemplate("email:{email_id}").render({"email_id": value})


def test_expression__builds_the_same_text_from_columns():
    expression = KeyTemplate("email:{email_id}").expression({"email_id": OuterRef("pk")})
    assert isinstance(expression, Concat)
    constant = KeyTemplate("sweep").expression({})
    assert isinstance(constant, Value) and constant.value == "sweep"
    value = KeyTemplate("email:{email_id}").expression({"email_id": 7})
    assert isinstance(value, Concat)


def test_check_fields__names_what_the_key_is_made_of():
    template = KeyTemplate("pr:{repository_id}/{number}")
    template.check_fields("pr.sync", {"number": 1, "repository_id": 2})
    with pytest.raises(TypeError, match="pr.sync jobs are keyed by repository_id, number; got number"):
        template.check_fields("pr.sync", {"number": 1})
