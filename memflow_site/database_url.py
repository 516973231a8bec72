"""Turn a `DATABASE_URL` into Django's DATABASES entry.

Accepts `postgres://` and `postgresql://` URLs, with the host either in the
authority part or as a `?host=/socket/dir` query parameter (libpq style), and
passes any other query parameters (sslmode, …) through as OPTIONS.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from memflow_site.runtime.env import ConfigError


def parse_database_url(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ConfigError(
            f"DATABASE_URL must be a postgres:// URL (memflow needs Postgres with pgvector), got {parts.scheme!r}"
        )
    options = dict(parse_qsl(parts.query))
    host = options.pop("host", None) or (unquote(parts.hostname) if parts.hostname else "")
    name = unquote(parts.path.lstrip("/")) or "postgres"
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
    }
