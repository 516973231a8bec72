"""The lexical arm's GIN index writes through: no pending list to scan at recall.

With GIN's default fast update, new term maps wait in a pending list that
every `lex ?| …` lookup scans in full until a vacuum or a 4 MB overflow
folds it in. Under a steady stream of captured prompts that list is never
empty: at 100,000 memories the bitmap index scan took 1-2.7 ms with a few
hundred pending pages against 0.07-0.15 ms with none, and an insert that
overflowed it paid for folding them all. Writing through costs each insert
its own ~60 key insertions instead, off the recall path.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0008_embedder_choice")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    [
                        "ALTER INDEX memory_lex_gin SET (fastupdate = off)",
                        # What is pending stays pending until folded in.
                        "SELECT gin_clean_pending_list('memory_lex_gin')",
                    ],
                    "ALTER INDEX memory_lex_gin RESET (fastupdate)",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_lex_gin"),
                migrations.AddIndex(
                    model_name="memory",
                    index=GinIndex(fields=["lex"], name="memory_lex_gin", fastupdate=False),
                ),
            ],
        )
    ]
