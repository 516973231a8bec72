"""Start-up invariants as Django system checks with stable ids."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


@register()
def check_time_zone(app_configs: Any, **kwargs: Any) -> list[Error]:
    if settings.TIME_ZONE != "UTC" or not settings.USE_TZ:
        return [
            Error(
                "memflow stores and compares times in UTC.",
                hint="Set TIME_ZONE = 'UTC' and USE_TZ = True.",
                id="memflow.E001",
            )
        ]
    return []


@register(Tags.database)
def check_extensions(app_configs: Any, databases: Any = None, **kwargs: Any) -> list[Error]:
    from django.db import connection

    if not databases:
        return []
    errors = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')"
        )
        available = {row[0] for row in cursor.fetchall()}
    for name, id_ in (("vector", "memflow.E002"), ("pg_trgm", "memflow.E003")):
        if name not in available:
            errors.append(
                Error(
                    f"The Postgres server has no '{name}' extension.",
                    hint="memflow needs Postgres with pgvector and pg_trgm; unset DATABASE_URL to use the embedded one.",
                    id=id_,
                )
            )
    return errors
