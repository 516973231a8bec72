"""Bearer-key authentication for the REST API (and, later, MCP)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework import authentication, exceptions

from contexts.models import ApiKey
from contexts.selectors import apikey_get_active


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiKey] | None:
        raw = bearer_token(request)
        if raw is None:
            return None
        key = apikey_get_active(raw_key=raw)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        if not key.user.is_active:
            raise exceptions.AuthenticationFailed("This key's user is disabled.")
        return key.user, key

    def authenticate_header(self, request: Any) -> str:
        # Makes unauthenticated requests answer 401 (with WWW-Authenticate), not 403.
        return self.keyword


def bearer_token(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def request_user(request: HttpRequest | Any) -> User:
    """The authenticated user of a request that passed authentication.

    Views reach this only behind `login_required` or DRF's `IsAuthenticated`,
    so an anonymous user here is a bug, not a client error.
    """
    user = request.user
    if not isinstance(user, User):
        raise TypeError("request_user() called on an unauthenticated request")
    return user
