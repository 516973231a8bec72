"""A longer pending list for the trigram index, folded by the worker.

A capture adds ~1 kB of entries to the trigram index's pending list (one per
trigram of its text). At the default limit of 64 kB, every ~60th capture
found the list full and folded it into the index itself: 20-130 ms on that
hook's time (an INSERT's p99 over 300 captures was 44 ms, its maximum 127).
Nothing on a hook's path searches by trigram, so its list can be long: 2 MB
is ~2,000 captures, and the worker folds both GIN indexes' lists every five
minutes (`memories.tasks.index_pending_fold`), so a hook seldom meets a
full one (p99 13 ms, maximum 13 ms). The lexical index keeps its short
list: the lexical arm of every recall scans it (selectors.GIN_PENDING_LIST_KB).
"""

from __future__ import annotations

from django.db import migrations

FUNC = "memories.tasks.index_pending_fold"
TRIGRAM_PENDING_LIST_KB = 2048


def add_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "memflow: fold pending index entries",
            "schedule_type": "I",
            "minutes": 5,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0009_lex_stays_inline"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [
        migrations.RunSQL(
            f"ALTER INDEX memory_text_trgm SET (gin_pending_list_limit = {TRIGRAM_PENDING_LIST_KB})",
            "ALTER INDEX memory_text_trgm RESET (gin_pending_list_limit)",
        ),
        migrations.RunPython(add_schedule, remove_schedule),
    ]
