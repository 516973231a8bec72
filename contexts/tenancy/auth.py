"""Bearer-key authentication for the REST API and the MCP endpoint, and the
limit on wrong keys per client address.

Past `MEMFLOW_KEY_FAILURES` distinct wrong keys (unknown or revoked) from one
address within `MEMFLOW_KEY_FAILURE_WINDOW_S`, every further wrong key from
that address is answered 429 `too_many_failed_attempts` with a Retry-After,
until the oldest of those failures is a window old. A valid key is never
refused: local agents share 127.0.0.1, and a script sending wrong keys must
not lock every hook on the machine out (a key's 240 random bits are what
stop guessing). The same wrong key sent again (a stale key in a hook's
config) counts once: it guesses nothing.

The failures live in a database cache of their own (`CACHES["key_failures"]`),
so every web process and the MCP endpoint count the same ones, and however
many addresses fail, the shared cache (the worker's liveness) is never culled
for them. Each failure claims one of an address's `MEMFLOW_KEY_FAILURES`
slots with the cache's `add`, which one INSERT decides: concurrent failures
cannot overwrite each other's count.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import caches
from django.http import HttpRequest
from rest_framework import authentication, exceptions

from contexts.errors import TooManyRequests
from contexts.models import ApiKey
from contexts.tenancy.selectors import apikey_get_active, hash_key

KEY_FAILURES_CODE = "too_many_failed_attempts"
KEY_FAILURES_CACHE = "key_failures"


def _now() -> float:
    """The clock of the failure windows (tests move it instead of waiting)."""
    return time.time()


def _slots(address: str) -> list[str]:
    name = hashlib.sha256(address.encode("utf-8", "replace")).hexdigest()[:32]
    return [f"key-failures:{name}:{slot}" for slot in range(settings.MEMFLOW_KEY_FAILURES)]


def _failures(slots: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The slots holding anything, and those of them whose failure is inside its window."""
    now = _now()
    found = caches[KEY_FAILURES_CACHE].get_many(slots)
    live = {
        slot: entry
        for slot, entry in found.items()
        if isinstance(entry, dict) and entry.get("until", 0) > now
    }
    return found, live


def key_failures_refuse(address: str) -> None:
    """Raise `TooManyRequests` while `address` is past the limit of wrong keys."""
    _, live = _failures(_slots(address))
    if len(live) < settings.MEMFLOW_KEY_FAILURES:
        return
    wait = max(1, math.ceil(min(entry["until"] for entry in live.values()) - _now()))
    raise TooManyRequests(
        f"Too many wrong API keys from this address; try again in {wait} s.",
        retry_after=wait,
        code=KEY_FAILURES_CODE,
    )


def key_failure_note(address: str, raw_key: str) -> None:
    """Count a wrong key from `address`, once per distinct key within a window."""
    cache = caches[KEY_FAILURES_CACHE]
    slots = _slots(address)
    found, live = _failures(slots)
    name = hash_key(raw_key)[:16]
    if any(entry.get("key") == name for entry in live.values()):
        return
    window = settings.MEMFLOW_KEY_FAILURE_WINDOW_S
    entry = {"key": name, "until": _now() + window}
    for slot in slots:
        if slot not in found and cache.add(slot, entry, timeout=window):
            return
    # No empty slot was left, or another process took the last ones first.
    # A slot whose failure is past its window by `_now` but still in the cache
    # (which expires rows by its own clock: `_now` moved ahead) is reused.
    for slot in found:
        if slot not in live:
            cache.set(slot, entry, timeout=window)
            return


def key_failures_clear(address: str) -> None:
    """Forget the wrong keys counted against `address` (an operator's unlock; tests)."""
    caches[KEY_FAILURES_CACHE].delete_many(_slots(address))


def client_address(request: HttpRequest | Any) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def apikey_authenticate(*, raw_key: str, address: str) -> ApiKey | None:
    """The active key `raw_key`, or None, counted against `address`.

    A wrong key raises `TooManyRequests` while `address` is past the limit; a
    valid key costs nothing more than its lookup.
    """
    key = apikey_get_active(raw_key=raw_key)
    if key is None:
        key_failures_refuse(address)
        key_failure_note(address, raw_key)
    return key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiKey] | None:
        raw = bearer_token(request)
        if raw is None:
            return None
        key = apikey_authenticate(raw_key=raw, address=client_address(request))
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
