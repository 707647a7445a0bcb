"""The host's own routes on its HTTP ingress: ``/metrics`` for Prometheus and ``/readyz`` for orchestrators.

Each is a mount of its own (the prefix is the route), made through ``HttpIngress.mount`` as any plugin's:
``GET /metrics`` answers ``HostMetrics.scrape()`` (with a supervisor's workers' counts, asked now);
``GET /readyz`` answers 200 ``{"ready": true, "problems": []}`` when ``problems()`` finds nothing, else 503
with what is not ready (``Retry-After: 5``). ``/healthz`` (the process answers at all) is the ingress's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ishiki_host.ingress.types import HttpHandler, HttpRequest, HttpResponse
from ishiki_host.observe.metrics import CONTENT_TYPE, HostMetrics

__all__ = ["METRICS_PATH", "READY_PATH", "metrics_handler", "ready_handler"]

METRICS_PATH = "/metrics"
READY_PATH = "/readyz"


def metrics_handler(metrics: HostMetrics) -> HttpHandler:
    """The handler of ``GET /metrics``."""

    async def serve(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, await metrics.scrape(), media_type=CONTENT_TYPE)

    return serve


def ready_handler(problems: Callable[[], Sequence[str]]) -> HttpHandler:
    """The handler of ``GET /readyz``: 200 while ``problems()`` is empty, else 503 listing them."""

    async def serve(request: HttpRequest) -> HttpResponse:
        found = list(problems())
        body = json.dumps({"ready": not found, "problems": found}, ensure_ascii=False) + "\n"
        if not found:
            return HttpResponse(200, body, media_type="application/json")
        return HttpResponse(503, body, media_type="application/json", headers={"Retry-After": "5"})

    return serve
