"""New index entries wait in GIN pending lists; the worker folds them in off the hooks' time."""

from __future__ import annotations

import pytest
from django_q.models import Schedule

from memories import services, tasks
from memories.services import RememberInput

pytestmark = pytest.mark.django_db


def test_the_worker_folds_what_captures_left_pending(acme, migrated_schedules):
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
