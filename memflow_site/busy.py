"""Load answers 503, never 500, outside the REST API's views too.

DRF's exception handler (contexts.errors) turns a `Busy`, a statement
timeout, a lock wait, a deadlock or a serialization failure into a 503 with
`Retry-After` for the API's views. This middleware does the same for every
other view: JSON under /api/, a page a person can read on the dashboard
(a fragment of one for an htmx request), and the same `Retry-After`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from psycopg import Error as PsycopgError

from contexts.errors import Busy, busy_from_database

logger = logging.getLogger(__name__)


class BusyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        busy = refusal_for(exception)
        if busy is None:
            return None
        logger.warning("%s %s: %s (%s)", request.method, request.path, busy.code, exception)
        response: HttpResponse
        if request.path.startswith("/api/"):
            response = JsonResponse(busy.as_json(), status=busy.status_code)
        else:
            fragment = request.headers.get("HX-Request") == "true"
            template = "_busy.html" if fragment else "503.html"
            response = render(request, template, {"busy": busy}, status=busy.status_code)
        for name, value in busy.headers.items():
            response[name] = value
        return response


def refusal_for(exception: BaseException) -> Busy | None:
    """The `Busy` a person or client should see for `exception`, or None if load did not cause it."""
    if isinstance(exception, Busy):
        return exception
    if isinstance(exception, DatabaseError | PsycopgError):
        return busy_from_database(exception)
    return None
