"""memflow's errors: one hierarchy for services, one JSON shape for the API.

Services raise `MemflowError` subclasses with a stable `code`. The REST API
turns any error into `{"code": ..., "detail": ...}` (plus `errors` for field
validation); the dashboard turns them into messages. Codes are part of the
API contract: clients branch on them, so they never change once published.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response


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


# DRF's own default codes are already stable names; these few are renamed so a
# client sees one vocabulary whatever layer answered.
_DRF_CODE_NAMES = {"invalid": "invalid", "error": "invalid"}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    # Imported here: rest_framework.views imports the authentication classes,
    # which import this module.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, MemflowError):
        return Response(exc.as_json(), status=exc.status_code)
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


def json_404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"code": "not_found", "detail": "No such endpoint."}, status=404)


def json_500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {"code": "server_error", "detail": "The server failed to answer; it has been logged."},
        status=500,
    )
