"""The Prometheus scrape endpoint: off unless a token or an address allowlist is configured."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from jobs import prometheus
from jobs.conf import jobs_settings


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token: str = jobs_settings.METRICS_TOKEN
    allowed = jobs_settings.METRICS_ALLOWED_IPS
    if not token and not allowed:
        # Off: the figures name queues and volumes, which no anonymous client should read.
        raise Http404("The metrics endpoint is off.")
    if allowed and not _address_allowed(request.META.get("REMOTE_ADDR", ""), allowed):
        return HttpResponse("Forbidden.\n", status=403, content_type="text/plain")
    if token and not _bearer_matches(request.headers.get("Authorization", ""), token):
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = prometheus.exposition(request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)


def _address_allowed(address: str, allowed: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(client in network for network in allowed)


def _bearer_matches(header: str, token: str) -> bool:
    scheme, _, presented = header.partition(" ")
    # Constant-time, so response timing does not reveal how much of a guess was right.
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())
