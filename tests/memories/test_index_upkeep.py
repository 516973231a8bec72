"""New index entries wait in GIN pending lists; the worker folds them in off the hooks' time."""

from __future__ import annotations

import pytest
from django.db import connection
from django_q.models import Schedule

from memories import services, tasks
from memories.services import RememberInput

pytestmark = pytest.mark.django_db


def _pending_list_limit(index: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [index])
        options = cursor.fetchone()[0] or []
    return next((o.split("=")[1] for o in options if o.startswith("gin_pending_list_limit=")), None)


def test_only_the_trigram_index_keeps_a_long_pending_list():
    # The lexical arm of every recall scans its index's pending list: that one stays short.
    assert _pending_list_limit("memory_text_trgm") == "2048"
    assert _pending_list_limit("memory_lex_gin") is None


def test_the_worker_folds_what_captures_left_pending(acme):
    for n in range(40):
        services.memory_remember(
            workspace=acme,
            item=RememberInput(
                text=f"deploy note {n}: the canary of billing-{n} runs in eu-west-{n % 3}"
            ),
        )
    folded = tasks.index_pending_fold()
    assert folded["memory_text_trgm"] > 0  # 40 captures' trigrams were waiting
    assert tasks.index_pending_fold() == {"memory_lex_gin": 0, "memory_text_trgm": 0}
    schedule = Schedule.objects.get(func="memories.tasks.index_pending_fold")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 5, -1)
