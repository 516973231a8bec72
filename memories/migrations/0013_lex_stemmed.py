"""Index words by their stems: every memory's term map and every workspace's
document frequencies are computed again with the current tokenizer.

Recall's lexical arm now reads `retries`, `retrying` and `retry` as one term,
on both sides; rows indexed before would never match a stemmed query word.
Document counts are rebuilt from the rows BM25 counts (all but the forgotten),
which also corrects any drift. About a minute per 100,000 memories.
"""

import json
from collections import Counter
from typing import Any

from django.db import migrations

from memories.lexical import term_frequencies

BATCH = 2_000
# Statistics rows that are not terms (memories.selectors.search); " swapping"
# marks a re-embed in progress and is kept.
STAT_DOCS = " docs"
STAT_LENGTH = " length"


def reindex(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT workspace_id FROM memories_memory ORDER BY 1")
        workspaces = [row[0] for row in cursor.fetchall()]
        for workspace_id in workspaces:
            _reindex_workspace(cursor, workspace_id)


def _reindex_workspace(cursor: Any, workspace_id: int) -> None:
    df: Counter[str] = Counter()
    last = 0
    while True:
        cursor.execute(
            "SELECT id, text, forgotten_at IS NULL FROM memories_memory"
            " WHERE workspace_id = %s AND id > %s ORDER BY id LIMIT %s",
            [workspace_id, last, BATCH],
        )
        rows = cursor.fetchall()
        if not rows:
            break
        ids, maps, lengths = [], [], []
        for memory_id, text, counted in rows:
            lex, length = term_frequencies(text)
            ids.append(memory_id)
            maps.append(json.dumps(lex))
            lengths.append(length)
            if counted:
                df.update(lex.keys())
                df[STAT_DOCS] += 1
                df[STAT_LENGTH] += length
        # Raw SQL: one statement a batch rather than one UPDATE a row.
        cursor.execute(
            "UPDATE memories_memory AS m SET lex = x.lex::jsonb, lex_len = x.len"
            " FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS x(id, lex, len)"
            " WHERE m.id = x.id",
            [ids, maps, lengths],
        )
        last = ids[-1]
    cursor.execute(
        "DELETE FROM memories_lexicalterm WHERE workspace_id = %s AND term <> ' swapping'",
        [workspace_id],
    )
    terms = sorted(df)
    cursor.execute(
        "INSERT INTO memories_lexicalterm (workspace_id, term, df)"
        " SELECT %s, t, d FROM unnest(%s::text[], %s::int[]) AS x(t, d)",
        [workspace_id, terms, [df[t] for t in terms]],
    )


class Migration(migrations.Migration):
    dependencies = [("memories", "0012_memory_private")]

    operations = [migrations.RunPython(reindex, migrations.RunPython.noop, elidable=True)]
