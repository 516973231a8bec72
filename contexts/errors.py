"""memflow's errors: one hierarchy for services, one JSON shape for the API.

Services raise `MemflowError` subclasses with a stable `code`. The REST API
turns any error into `{"code": ..., "detail": ...}` (plus `errors` for field
validation); the dashboard turns them into messages. Codes are part of the
API contract: clients branch on them, so they never change once published.
"""

from __future__ import annotations

import io
import logging
import math
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import Http404, HttpRequest, JsonResponse
from psycopg import Error as PsycopgError
from psycopg import errors as pg
from psycopg_pool import PoolTimeout
from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class MemflowError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(
        self, detail: str, *, code: str | None = None, extra: dict[str, Any] | None = None
    ):
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        self.extra = extra or {}

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, **self.extra}


class NotFound(MemflowError):
    status_code = 404
    code = "not_found"


class Forbidden(MemflowError):
    status_code = 403
    code = "permission_denied"


class Conflict(MemflowError):
    status_code = 409
    code = "conflict"


class Invalid(MemflowError):
    status_code = 400
    code = "invalid"


class TooLarge(MemflowError):
    status_code = 413
    code = "request_too_large"


class Busy(MemflowError):
    """Refused for now to keep capacity for others; the client may retry after a while."""

    status_code = 503
    code = "busy"

    def __init__(self, detail: str, *, retry_after: int = 2, code: str | None = None):
        super().__init__(detail, code=code)
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}


class TooManyRequests(Busy):
    status_code = 429
    code = "too_many_requests"


def busy_from_database(exc: BaseException) -> Busy | None:
    """The refusal to give for a database error that load caused, or None for any other.

    A statement stopped by `statement_timeout`, a lock wait stopped by
    `lock_timeout`, a deadlock, a serialization failure (each rolled its
    transaction back), or no database connection to be had (the pool's, or
    the server's limit): the same request may well succeed in a moment, so
    it is a 503 with a `Retry-After`, never a 500. Takes Django's wrapped
    errors and psycopg's own (memflow_site/runtime/db.py talks to psycopg directly).
    """
    for error in (exc, exc.__cause__):
        if isinstance(error, pg.QueryCanceled):
            return Busy(
                "The database stopped this request: a statement ran past its time limit "
                "while the server was busy. Its transaction was rolled back; try again shortly.",
                code="statement_timeout",
                retry_after=5,
            )
        if isinstance(error, pg.LockNotAvailable | pg.DeadlockDetected | pg.SerializationFailure):
            return Busy(
                "Other writes held what this request needed to change. Its transaction was "
                "rolled back; try again shortly.",
                retry_after=1,
            )
        if isinstance(error, PoolTimeout | pg.TooManyConnections):
            return Busy("Every database connection is in use; try again shortly.", retry_after=2)
    return None


# DRF's own default codes are already stable names; these few are renamed so a
# client sees one vocabulary whatever layer answered.
_DRF_CODE_NAMES = {"invalid": "invalid", "error": "invalid"}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    # Imported here: rest_framework.views imports the authentication classes,
    # which import this module.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, MemflowError):
        return Response(
            exc.as_json(), status=exc.status_code, headers=getattr(exc, "headers", None)
        )
    if isinstance(exc, DatabaseError | PsycopgError) and (busy := busy_from_database(exc)):
        logger.warning("%s %s: %s (%s)", *_where(context), busy.code, exc)
        return Response(busy.as_json(), status=busy.status_code, headers=busy.headers)
    if isinstance(exc, RequestDataTooBig):
        # Django's own answer would be an HTML 400 page.
        too_large = TooLarge(
            f"The request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes."
        )
        return Response(too_large.as_json(), status=too_large.status_code)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf_exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    assert isinstance(exc, drf_exceptions.APIException)
    if isinstance(exc, drf_exceptions.ValidationError):
        response.data = {
            "code": "invalid",
            "detail": _first_message(exc.detail),
            "errors": exc.detail,
        }
        return response
    codes = exc.get_codes()
    code = codes if isinstance(codes, str) else exc.default_code
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.default_detail)
    response.data = {"code": _DRF_CODE_NAMES.get(code, code), "detail": str(detail)}
    return response


def _where(context: dict[str, Any]) -> tuple[str, str]:
    request = context.get("request")
    return (getattr(request, "method", "?"), getattr(request, "path", "?"))


def _first_message(detail: Any, path: str = "") -> str:
    """The first validation message, prefixed with the field it is about."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{name}".strip(".") if name else path)
    if isinstance(detail, list) and detail:
        for index, item in enumerate(detail):
            if item:
                sub = path if not isinstance(item, (dict, list)) else f"{path}[{index}]"
                return _first_message(item, sub)
    text = str(detail)
    return f"{path}: {text}" if path else text


# What Postgres cannot store in text or jsonb: NUL, and lone UTF-16 surrogates
# (what a JSON escape such as \ud800 decodes to).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, refusing with a 400 what would otherwise fail later
    with a 500: nesting deeper than `MEMFLOW_JSON_MAX_DEPTH` (Python's own
    recursion limit is hit near 1,000 levels), and strings holding NUL or lone
    surrogates anywhere, map keys included. With `clean`, such characters,
    and bytes that are not UTF-8, become U+FFFD instead (hooks: a tool result
    may hold anything)."""

    clean = False

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        if self.clean and stream is not None:
            # Bytes that are not UTF-8 become U+FFFD as well.
            stream = io.BytesIO(stream.read().decode("utf-8", "replace").encode())
        try:
            data = super().parse(stream, media_type, parser_context)
            return _checked(data, 0, settings.MEMFLOW_JSON_MAX_DEPTH, self.clean)
        except RecursionError:
            raise drf_exceptions.ParseError(
                "The JSON is nested too deeply.", code="json_too_deep"
            ) from None


def _checked(value: Any, depth: int, max_depth: int, clean: bool) -> Any:
    if isinstance(value, str):
        return _checked_text(value, clean)
    if isinstance(value, float) and not math.isfinite(value):
        # `1e400` parses as infinity, which jsonb cannot hold. A hook keeps its
        # event with the number as the text it was; elsewhere it is refused.
        if clean:
            return repr(value)
        raise drf_exceptions.ParseError(
            "A number in the JSON is out of range (it would be infinite).",
            code="number_out_of_range",
        )
    if not isinstance(value, (dict, list)):
        return value
    if depth >= max_depth:
        raise drf_exceptions.ParseError(
            f"The JSON nests deeper than {max_depth} levels.", code="json_too_deep"
        )
    if isinstance(value, list):
        return [_checked(item, depth + 1, max_depth, clean) for item in value]
    return {
        _checked_text(key, clean): _checked(item, depth + 1, max_depth, clean)
        for key, item in value.items()
    }


def _checked_text(text: str, clean: bool) -> str:
    found = _UNSTORABLE.search(text)
    if found is None:
        return text
    if clean:
        return _UNSTORABLE.sub("\ufffd", text)
    raise drf_exceptions.ParseError(
        f"Text may not hold U+{ord(found.group()):04X} (NUL or a lone surrogate).",
        code="invalid_characters",
    )


def json_404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"code": "not_found", "detail": "No such endpoint."}, status=404)


def json_500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {"code": "server_error", "detail": "The server failed to answer; it has been logged."},
        status=500,
    )
