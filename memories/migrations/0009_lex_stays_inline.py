"""Keep the lexical term map in the row, never in the TOAST table.

With EXTERNAL storage (0006) the toaster moved `lex` out of line whenever
the row stayed over ~2 kB after the embedding went: every memory with a
long text (3.6% of 100,000 package descriptions, but one in eight of a
query's lexical candidates, long texts holding more terms). The lexical arm
then fetched it from TOAST once per query term per candidate — ~4 buffer
reads each time. MAIN storage moves the text out first and keeps `lex`
inline (compressed only when nothing else makes the row fit).

The rows whose map is out of line now are rewritten so they get the new
storage; on Postgres before 17 (no pg_column_toast_chunk_id), the rows
large enough to have been toasted.
"""

from typing import Any

from django.db import migrations

TOASTED_17 = "pg_column_toast_chunk_id(lex) IS NOT NULL"
LARGE_BEFORE_17 = "pg_column_size(lex) + pg_column_size(text) > 1200"


def rewrite_toasted(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    toasted = TOASTED_17 if connection.pg_version >= 170000 else LARGE_BEFORE_17
    with connection.cursor() as cursor:
        # Raw SQL: a new datum (`|| '{}'`) is stored afresh under the
        # column's current storage; the same pointer would be kept as it is.
        cursor.execute(f"UPDATE memories_memory SET lex = lex || '{{}}'::jsonb WHERE {toasted}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0008_embedder_choice")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN lex SET STORAGE MAIN",
            "ALTER TABLE memories_memory ALTER COLUMN lex SET STORAGE EXTERNAL",
        ),
        migrations.RunPython(rewrite_toasted, migrations.RunPython.noop, elidable=True),
    ]
