"""The email index in the admin: "Similar emails" on an email's page, the email list's
search by words and meaning, and the index's own page (Admin → Email pipeline → Email
index) with its state and "Re-index all".

Pages that read the index say so when it cannot be reached (or, in local mode, stays busy
past ``QDRANT_LOCAL_WAIT``), and show what they can without it: a search falls back to its
word matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ORDER_VAR, ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Case, F, FloatField, Q, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

import jobs
from pipeline import job_types, search, semantic
from pipeline.errors import IndexRefused, VectorIndexUnavailable
from pipeline.models import EmailMessage, ErrorLogEntry, PipelineRun, VectorRecord

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

UNREACHABLE = (VectorIndexUnavailable, IndexRefused)
PARTIAL_ROWS = 50


def email_link(email: EmailMessage) -> str:
    url = reverse("admin:pipeline_emailmessage_change", args=[email.pk])
    return format_html('<a href="{}">#{} {}</a>', url, email.pk, (email.subject or "(no subject)")[:80])


def similar_html(email: EmailMessage) -> str:
    """The "Similar emails" of an email's page: nearest by meaning, with their scores."""
    if not email.pk:
        return "-"
    try:
        found = semantic.similar(email)
    except UNREACHABLE as exc:
        return format_html('<span class="pl-wrap">The vector index cannot be read now: {}</span>', str(exc))
    if found is None:
        return "Not in the vector index (yet): see its status and errors."
    if not found:
        return "No other email is in the vector index."
    return format_html(
        '<table class="pl-similar"><tr><th>email</th><th>score</th><th>labels</th></tr>{}</table>',
        format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((email_link(hit.email), f"{hit.score:.3f}", ", ".join(hit.email.labels or [])) for hit in found),
        ),
    )


def vector_record_html(email: EmailMessage) -> str:
    record = getattr(email, "vector_record", None) if email.pk else None
    if record is None:
        return "-"
    current = (
        " (not the current model's: Re-index all writes it again)"
        if record.collection != semantic.collection()
        else ""
    )
    return f"{record.chunks} chunk(s) in {record.collection}, embedded by {record.model} at {record.indexed_at}{current}"


class MeaningSearchMixin:
    """The email list's search: rows matching the words (subject, sender, Message-ID, and
    the full-text index) and the nearest by meaning (``SEARCH_MEANING_RESULTS``, less those
    scoring under ``SEARCH_MEANING_CUTOFF`` of the best one), merged;
    rows matching both first, then by closeness of meaning, each row saying why it matched."""

    search_help_text: StrOrPromise | None = (
        "Finds emails by their words (subject, sender, Message-ID, full text) and by meaning "
        "(the nearest emails to what you type, in any wording)."
    )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[EmailMessage], search_term: str
    ) -> tuple[QuerySet[EmailMessage], bool]:
        words_only, duplicates = super().get_search_results(request, queryset, search_term)  # type: ignore[misc]
        if not search_term.strip():
            return words_only, duplicates
        words = Q(pk__in=words_only.values("pk")) | Q(pk__in=search.search(search_term).values("pk"))
        scores: dict[int, float] = {}
        try:
            hits = semantic.by_meaning(search_term)
            # The nearest are always "some" emails: those far behind the best are left out.
            floor = max(0.0, hits[0].score * settings.SEARCH_MEANING_CUTOFF) if hits else 0.0
            scores = {hit.email.pk: hit.score for hit in hits if hit.score > floor}
        except UNREACHABLE as exc:
            self.message_user(  # type: ignore[attr-defined]
                request, f"Search by meaning is not available now, only by words: {exc}", messages.WARNING
            )
        score = Case(
            *(When(pk=pk, then=Value(value)) for pk, value in scores.items()),
            default=Value(0.0),
            output_field=FloatField(),
        )
        matched = queryset.filter(words | Q(pk__in=list(scores))).annotate(
            match_words=Case(
                When(words, then=Value(True)), default=Value(False), output_field=BooleanField()
            ),
            match_score=score,
        )
        matched = matched.annotate(
            match_rank=Case(
                When(match_words=True, then=Value(1.0)), default=Value(0.0), output_field=FloatField()
            )
            + F("match_score")
        )
        return matched, duplicates

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        base = super().get_changelist(request, **kwargs)  # type: ignore[misc]

        class MeaningChangeList(base):  # type: ignore[valid-type,misc]
            """A search's rows in the order of their match, unless a column was chosen."""

            def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
                found = super().get_queryset(request, exclude_parameters)
                if "match_rank" in found.query.annotations and ORDER_VAR not in self.params:
                    return found.order_by("-match_rank", "-pk")
                return found

        return MeaningChangeList

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)  # type: ignore[misc]
        return (*shown, "match") if request.GET.get("q", "").strip() else shown

    @admin.display(description="why it matched")
    def match(self, obj: EmailMessage) -> str:
        reasons = []
        if getattr(obj, "match_words", False):
            reasons.append("words")
        score = getattr(obj, "match_score", 0.0)
        if score:
            reasons.append(f"meaning {score:.2f}")
        return " + ".join(reasons) or "-"


@admin.register(VectorRecord)
class EmailIndexAdmin(admin.ModelAdmin):
    """The index's page: its list is the state (model, collection, points, partially indexed
    emails and why) with "Re-index all" (a job, with progress), for the change permission."""

    fields = ("email", "collection", "model", "dimensions", "chunks", "indexed_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_urls(self) -> list:
        rebuild = path(
            "rebuild/", self.admin_site.admin_view(self.rebuild_view), name="pipeline_vectorrecord_rebuild"
        )
        return [rebuild, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        state = semantic.state()
        partial = list(state.partially_indexed[:PARTIAL_ROWS])
        context = {
            **self.admin_site.each_context(request),
            "title": "Email index",
            "opts": self.model._meta,
            "state": state,
            "partial_count": state.partially_indexed.count(),
            "partial_rows": [_why_partial(email) for email in partial],
            "can_rebuild": self.has_change_permission(request),
            "rebuild_url": reverse("admin:pipeline_vectorrecord_rebuild"),
            "rebuild_job_url": _job_url(state.rebuild),
        }
        return TemplateResponse(request, "admin/pipeline/email_index.html", context)

    def rebuild_view(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        job = jobs.enqueue(job_types.REBUILD_INDEX, {"since": timezone.now().isoformat()})
        self.message_user(
            request,
            format_html('Re-indexing every email: <a href="{}">job #{}</a>.', _job_url(job), job.pk),
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:pipeline_vectorrecord_changelist"))


def _why_partial(email: EmailMessage) -> dict[str, Any]:
    run = PipelineRun.objects.filter(email=email).exclude(index_missing="").order_by("-id").first()
    error = ErrorLogEntry.objects.filter(email=email).order_by("-id").first()
    return {
        "email": email_link(email),
        "missing": run.index_missing if run else "",
        "error": error.text[:500] if error else "",
        "when": error.occurred_at if error else None,
    }


def _job_url(job: jobs.Job | None) -> str:
    return jobs.admin_url(job) if job is not None else ""
