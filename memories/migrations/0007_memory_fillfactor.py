"""Leave room on each page of memories_memory for HOT updates.

Every recall rehearses the entries it returns (access_count, last_accessed).
Neither column is indexed, so with free space on the page Postgres updates
the row in place (a HOT update) and touches no index; on a full page it
writes a new row version into every index — the HNSW graph included —
which made the rehearsal of 12 rows cost ~25 ms over 100,000 memories.
A row is ~1 kB (the term map is inline), so a page holds about eight: half
of it left free lets most of the rows on a page be rehearsed in place
before the page is pruned.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_lex_uncompressed")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory SET (fillfactor = 50)",
            "ALTER TABLE memories_memory RESET (fillfactor)",
        )
    ]
