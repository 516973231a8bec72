"""Hot reads bound on the server, and model instances from their rows.

Building an ORM statement can cost more than running it (the membership
check every request makes: 3.5 ms through the ORM, 0.6 ms as the same SQL
sent with server-side binding), and Django's cursors bind parameters on the
client. The few statements on every request's path have fixed texts and go
to psycopg directly.

They are not prepared. Django turns preparing off on its connections
(prepare_threshold None, for pgbouncer's sake), and turning it on gained
nothing measurable: recall's two arms need a plan made for their values
(Postgres keeps choosing custom plans for them; forced generic plans made
recall 30 times slower), so a prepared arm is still planned every time and
only its parse is saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import psycopg
from django.db import connection
from django.db.models import Field, JSONField, Model

# psycopg's own (compiled) timestamptz loader. Django's, which its connections
# carry, is written in Python: at ~10 µs a value it was ~1 ms of each recall.
# Both give aware datetimes in the session's time zone (UTC: Django sets it).
_TIMESTAMPTZ_LOADER = cast(
    "type[psycopg.adapt.Loader]",
    psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, psycopg.pq.Format.TEXT),
)


def bound_rows(
    sql: str, params: dict[str, Any], on: psycopg.Connection[Any] | None = None
) -> list[tuple[Any, ...]]:
    """The rows of `sql` (named %(…)s parameters), bound on the server, on Django's connection or `on`.

    Runs in whatever transaction that connection is in. jsonb comes back as
    text, as Django's own cursors give it (see `instance`).
    """
    if on is None:
        connection.ensure_connection()
        with connection.wrap_database_errors:
            return bound_rows(sql, params, connection.connection)
    with psycopg.Cursor(on) as cursor:
        cursor.adapters.register_loader("timestamptz", _TIMESTAMPTZ_LOADER)
        cursor.execute(sql, params)
        return cursor.fetchall()


class Columns:
    """Some of a model's concrete fields, as a select list and back into instances."""

    def __init__(self, model: type[Model], fields: Sequence[Field[Any, Any]], alias: str):
        self.model = model
        self.sql = ", ".join(f"{alias}.{f.column}" for f in fields)
        self.names = [f.attname for f in fields]
        # Django's connections hand jsonb over as text; the field decodes it.
        self.json = [
            (n, cast("JSONField[Any]", f)) for n, f in enumerate(fields) if isinstance(f, JSONField)
        ]

    @classmethod
    def all(cls, model: type[Model], alias: str) -> Columns:
        return cls(model, list(model._meta.concrete_fields), alias)

    def index(self, attname: str) -> int:
        return self.names.index(attname)

    def instance(self, values: Sequence[Any]) -> Any:
        """A model instance, as the ORM would have built it from these columns."""
        decoded = list(values)
        for n, json_field in self.json:
            decoded[n] = json_field.from_db_value(decoded[n], json_field.cached_col, connection)
        return self.model.from_db(connection.alias, self.names, decoded)
