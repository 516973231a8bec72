"""A stored original as it travels: its content type checked on the way in,
and served on the way out as a download that no browser renders.

An original is whatever a tool printed, and a workspace editor chooses its
content type, so it is never trusted to be a page: a `text/html` original
served from the dashboard's origin would run with the viewer's session.
"""

from __future__ import annotations

import re

from django.http import HttpResponse

from contexts.errors import Invalid
from contexts.models import CompressionRef

DEFAULT_TEXT = "text/plain; charset=utf-8"
DEFAULT_BINARY = "application/octet-stream"

# RFC 9110 media type: type "/" subtype *( ";" parameter ), tokens and quoted strings.
_TOKEN = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_PARAM = rf"{_TOKEN}=(?:{_TOKEN}|\"[^\"\\\x00-\x1f\x7f]*\")"
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_PARAM})*")

# Types a browser shows as inert text or data; anything else (HTML, SVG, XML,
# scripts, PDF, …) is served as an opaque byte stream.
_PASSIVE = frozenset(
    {
        "text/plain",
        "text/csv",
        "text/markdown",
        "text/x-diff",
        "text/x-log",
        "application/json",
        "application/x-ndjson",
        "application/octet-stream",
    }
)

# No script, no plugin, no request of its own, even when opened directly.
ORIGINAL_CSP = "sandbox; default-src 'none'; frame-ancestors 'none'"


def content_type_clean(value: str) -> str:
    """The media type as given, or `Invalid` (`invalid_content_type`) for a malformed one."""
    value = value.strip()
    if len(value) > 200 or not _MEDIA_TYPE.fullmatch(value):
        raise Invalid(
            "`content_type` must be a media type such as `text/plain; charset=utf-8` "
            "(type/subtype, optional parameters, no control characters, ≤ 200 characters).",
            code="invalid_content_type",
        )
    return value


def is_valid_content_type(value: str) -> bool:
    return len(value) <= 200 and bool(_MEDIA_TYPE.fullmatch(value))


def served_content_type(stored: str) -> str:
    """What a response may say: the stored type when it is valid and inert, else bytes."""
    if not is_valid_content_type(stored):
        return DEFAULT_BINARY  # stored before types were checked: still retrievable
    essence = stored.split(";", 1)[0].strip().lower()
    return stored if essence in _PASSIVE else DEFAULT_BINARY


def original_response(ref: CompressionRef) -> HttpResponse:
    """The original as kept (byte for byte unless `ref.masked`), as an attachment
    that cannot run as a page."""
    response = HttpResponse(bytes(ref.content), content_type=served_content_type(ref.content_type))
    response["Content-Disposition"] = f'attachment; filename="{ref.sha256[:16]}.bin"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = ORIGINAL_CSP
    response["X-Memflow-Sha256"] = ref.sha256
    if is_valid_content_type(ref.content_type):
        response["X-Memflow-Content-Type"] = ref.content_type
    if ref.masked:
        # Not the output as it was: the credentials in it were cut out before it was kept.
        response["X-Memflow-Masked"] = "; ".join(ref.masked)
    return response
