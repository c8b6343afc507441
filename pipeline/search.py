"""The search index: a PostgreSQL full-text index (tsvector under GIN); on MariaDB and
MySQL a FULLTEXT index on the stored text (pipeline migration 0004); on SQLite (the
embedded demo) a plain-text match on the stored text.

Everything of the pipeline that depends on the database it runs on is here, the column's
type included; the models are imported when a function runs (they import this module)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorField
from django.db import DatabaseError, connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet, TextField, Value
from django.db.models.expressions import RawSQL

from pipeline.errors import IndexingError

if TYPE_CHECKING:
    from pipeline.models import EmailMessage

# Characters that are operators in a MariaDB boolean-mode full-text query.
_FULLTEXT_OPERATORS = re.compile(r'[-+<>()~*"@]')
MAX_INDEXED_CHARS = 200_000  # well under PostgreSQL's 1 MB tsvector limit


class PortableSearchVectorField(SearchVectorField):
    """A tsvector on PostgreSQL; elsewhere a text column that stays empty (MariaDB has no
    tsvector type: it searches ``IndexRecord.text`` through a FULLTEXT index instead)."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "tsvector" if connection.vendor != "mysql" else "longtext"


def index(email_id: int, text: str) -> None:
    """Put an email's text in the index; IndexingError when the index cannot be reached."""
    try:
        _write(email_id, text[:MAX_INDEXED_CHARS])
    except DatabaseError as exc:
        raise IndexingError(f"The search index could not be reached: {exc}") from exc


def _write(email_id: int, text: str) -> None:
    # One short transaction on the one index row, or part of the caller's (no savepoint:
    # an error rolls the caller's transaction back too, which is what the pipeline wants).
    # The tsvector is computed by PostgreSQL in the same INSERT.
    from pipeline.models import IndexRecord

    vector = None
    if connection.vendor == "postgresql":
        vector = SearchVector(Value(text, output_field=TextField()), config=settings.SEARCH_CONFIG)
    with transaction.atomic(savepoint=False):
        IndexRecord.objects.filter(email_id=email_id).delete()
        IndexRecord.objects.create(email_id=email_id, text=text, vector=vector)


def search(query: str) -> QuerySet[EmailMessage]:
    """Emails whose indexed text matches ``query``."""
    from pipeline.models import EmailMessage

    if connection.vendor == "postgresql":
        return EmailMessage.objects.filter(
            index_record__vector=SearchQuery(query, config=settings.SEARCH_CONFIG, search_type="websearch")
        )
    if connection.vendor == "mysql":
        # Every word required (boolean mode, "+word"), as websearch does on PostgreSQL;
        # the query's own operators are dropped so no input makes a syntax error.
        words = " ".join(f"+{word}" for word in _FULLTEXT_OPERATORS.sub(" ", query).split())
        return EmailMessage.objects.filter(
            index_record__in=RawSQL(
                "SELECT id FROM pipeline_indexrecord WHERE MATCH (text) AGAINST (%s IN BOOLEAN MODE)",
                [words],
            )
        )
    matches = EmailMessage.objects.all()
    for word in query.split():
        matches = matches.filter(index_record__text__icontains=word)
    return matches
