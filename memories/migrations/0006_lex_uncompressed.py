"""Keep the lexical term map uncompressed.

Rows carry a 1.5 kB embedding, so Postgres compressed `lex` inline (pglz),
and the lexical arm decompressed it once per query term per candidate —
most of a recall's time over 100,000 memories. With EXTERNAL storage the
toaster moves the embedding out of line first and leaves `lex` inline and
plain. Existing rows keep their compressed value until next rewritten.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_compartment_index")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN lex SET STORAGE EXTERNAL",
            "ALTER TABLE memories_memory ALTER COLUMN lex SET STORAGE EXTENDED",
        )
    ]
