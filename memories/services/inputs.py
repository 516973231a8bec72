"""What remember takes and gives back, and the checks every stored text passes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contexts.errors import Invalid, MemflowError
from contexts.models import Workspace
from contexts.secrets import find_secret, find_secret_in_json
from contexts.tenancy.knobs import knob
from memories.models import DedupeEvent, Memory

if TYPE_CHECKING:
    pass

_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


def parse_expiry(expires_at: Any = None, ttl: Any = None) -> datetime | None:
    """When a memory written now expires: `expires_at` (ISO 8601, with a zone or
    taken as UTC) or `ttl` (seconds, or a number with s/m/h/d/w: "7d"), not both.
    A time not in the future is refused, as is anything unreadable."""
    if expires_at in (None, "") and ttl in (None, ""):
        return None
    if expires_at not in (None, "") and ttl not in (None, ""):
        raise Invalid("Give expires_at or ttl, not both.", code="invalid_expiry")
    now = timezone.now()
    if ttl not in (None, ""):
        match = _TTL_RE.match(str(ttl)) if not isinstance(ttl, bool) else None
        if match is None:
            raise Invalid(
                f"ttl {ttl!r} is not a duration (seconds, or e.g. 90m, 12h, 7d).",
                code="invalid_ttl",
            )
        seconds = float(match.group(1)) * _TTL_UNITS[(match.group(2) or "s").lower()]
        if seconds <= 0:
            raise Invalid("ttl must be longer than zero.", code="expiry_in_past")
        if seconds > 100 * 365 * 86400:
            raise Invalid("ttl is longer than a hundred years.", code="invalid_ttl")
        return now + timedelta(seconds=seconds)
    when = expires_at if isinstance(expires_at, datetime) else None
    if when is None and isinstance(expires_at, str):
        try:
            when = parse_datetime(expires_at.strip())
        except ValueError:
            when = None
    if when is None:
        raise Invalid(f"expires_at {expires_at!r} is not an ISO 8601 time.", code="invalid_expiry")
    if timezone.is_naive(when):
        when = timezone.make_aware(when, UTC)
    if when <= now:
        raise Invalid("expires_at must be in the future.", code="expiry_in_past")
    return when


class SecretDetected(MemflowError):
    status_code = 422
    code = "secret_detected"


class TextTooLong(MemflowError):
    status_code = 413
    code = "text_too_long"


@dataclass
class RememberInput:
    text: str
    compartment: str = ""
    state_key: str = ""
    state_value: str = ""
    source: str = Memory.Source.MODEL
    app: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None  # importers keep the original time
    private: bool = False  # only its author reads it
    expires_at: datetime | None = None
    # The project it was said in ("" : the whole workspace; by default the session's).
    project: str | None = None


Outcome = Literal["created", "strengthened", "merged"]


@dataclass
class RememberResult:
    outcome: Outcome
    memory: Memory
    superseded: list[int] = field(default_factory=list)
    event: DedupeEvent | None = None
    similarity: float | None = None


def memory_validate(*, workspace: Workspace, item: RememberInput) -> RememberInput:
    """A cleaned copy of `item`, or the error that refuses it. Stores nothing."""
    text = item.text.strip() if isinstance(item.text, str) else ""
    if not text:
        raise Invalid("A memory needs some text.", code="empty_text")
    if "\x00" in text:
        raise Invalid("Memory text cannot contain NUL characters.", code="invalid_text")
    limit = int(knob(workspace, "max_text_chars"))
    if len(text) > limit:
        raise TextTooLong(
            f"The text has {len(text)} characters; this workspace takes at most {limit}."
        )
    # Every field that is stored and shown again: the metadata's keys and strings too.
    for value in (text, item.state_value, item.state_key, item.app, item.compartment):
        label = find_secret(value)
        if label:
            raise SecretDetected(f"The text looks like it contains a {label}; it was not stored.")
    label = find_secret_in_json(item.metadata or {})
    if label:
        raise SecretDetected(f"The metadata looks like it contains a {label}; it was not stored.")
    if item.source not in Memory.Source.values:
        raise Invalid(f"Unknown source {item.source!r}.", code="invalid_source")
    if item.state_value and not item.state_key:
        raise Invalid("A state_value needs a state_key.", code="state_key_required")
    if item.private and item.state_key:
        # A state key has one current value for the whole workspace: it cannot be one reader's.
        raise Invalid("A state entry cannot be private.", code="private_state_key")
    if item.expires_at is not None and item.expires_at <= timezone.now():
        raise Invalid("expires_at must be in the future.", code="expiry_in_past")
    compartment = item.compartment.strip().lower()
    if len(compartment) > 64 or len(item.state_key) > 200 or len(item.app) > 64:
        raise Invalid(
            "compartment and app take 64 characters, state_key 200.", code="field_too_long"
        )
    return RememberInput(
        text=text,
        compartment=compartment,
        state_key=item.state_key.strip(),
        state_value=item.state_value.strip(),
        source=item.source,
        app=item.app.strip(),
        metadata=item.metadata or {},
        created_at=item.created_at,
        private=bool(item.private),
        expires_at=item.expires_at,
    )
