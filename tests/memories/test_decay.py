from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories import decay, selectors, services
from memories.models import Memory
from memories.services import RememberInput


def test_retention_follows_the_power_law():
    now = timezone.now()
    fresh = decay.retention(last_accessed=now, access_count=0, source="hook", now=now)
    assert fresh == 1.0
    # Δt = τ → (1 + 1)^-0.5; the real half-life is 3τ.
    one_tau = decay.retention(
        last_accessed=now - timedelta(days=30), access_count=0, source="hook", now=now
    )
    assert one_tau == pytest.approx(2**-0.5)
    three_tau = decay.retention(
        last_accessed=now - timedelta(days=90), access_count=0, source="hook", now=now
    )
    assert three_tau == pytest.approx(0.5)
    # The model's own memories fade half as fast.
    model = decay.retention(
        last_accessed=now - timedelta(days=60), access_count=0, source="model", now=now
    )
    assert model == pytest.approx(one_tau)
    # Use slows forgetting: (1 + 0.5·log2(1 + n)), capped at 1.
    used = decay.retention(
        last_accessed=now - timedelta(days=90), access_count=3, source="hook", now=now
    )
    assert used == pytest.approx(min(0.5 * (1 + 0.5 * math.log2(4)), 1.0))


def test_the_sql_formula_matches_the_python_one(acme):
    now = timezone.now()
    cases = [(0, 0, "hook"), (45, 2, "model"), (400, 0, "import"), (3000, 7, "hook")]
    with connection.cursor() as cursor:
        for days, count, source in cases:
            last = now - timedelta(days=days)
            cursor.execute(
                f"SELECT {decay.retention_sql()} FROM (SELECT %s::timestamptz AS last_accessed, %s AS access_count, %s AS source) m",
                [now, 30.0, last, count, source],
            )
            (sql_value,) = cursor.fetchone()
            expected = decay.retention(
                last_accessed=last, access_count=count, source=source, now=now
            )
            assert float(sql_value) == pytest.approx(expected, rel=1e-9)


def test_cleanup_removes_only_faded_entries_and_keeps_evidence(acme):
    old = timezone.now() - timedelta(days=3000)
    faded = services.memory_remember(
        workspace=acme, item=RememberInput(text="An old hook capture nobody read.", source="hook")
    ).memory
    valuable = services.memory_remember(
        workspace=acme, item=RememberInput(text="An old decision by the model.", source="model")
    ).memory
    evidence = services.memory_remember(
        workspace=acme, item=RememberInput(text="Old evidence for a conclusion.", source="hook")
    ).memory
    other = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="Another old capture, also evidence.", source="hook"),
    ).memory
    services.memory_consolidate(
        workspace=acme,
        ids=[evidence.pk, other.pk],
        conclusion="A conclusion resting on old captures.",
    )
    Memory.objects.filter(pk__in=[faded.pk, valuable.pk, evidence.pk, other.pk]).update(
        last_accessed=old
    )

    report = services.memory_cleanup(workspace=acme, dry_run=True)
    ids = {i for i, _, _ in report.candidates}
    assert faded.pk in ids
    assert evidence.pk not in ids and other.pk not in ids  # abstraction keeps its material
    # model entries go only below a third of the threshold: R(3000d, model) ≈ 0.14
    assert valuable.pk not in ids
    assert Memory.objects.filter(pk=faded.pk).exists()  # a dry run changes nothing

    services.memory_cleanup(workspace=acme, dry_run=False)
    # forgotten, not deleted: restorable until the window ends
    tomb = Memory.objects.get(pk=faded.pk)
    assert tomb.forgotten_at is not None and tomb.forgotten_reason == "decayed"
    assert Memory.objects.get(pk=valuable.pk).forgotten_at is None
    stats = selectors.lexical_stats(workspace=acme, terms=["capture"])
    assert stats.docs == Memory.objects.filter(workspace=acme, forgotten_at=None).count()
    later = timezone.now() + timedelta(days=31)
    assert services.memory_cleanup(workspace=acme, dry_run=False, now=later).purged == 1
    assert not Memory.objects.filter(pk=faded.pk).exists()


def test_fading_lists_valuable_entries_under_half(acme):
    memory = services.memory_remember(
        workspace=acme, item=RememberInput(text="We chose Postgres over MySQL.", source="model")
    ).memory
    Memory.objects.filter(pk=memory.pk).update(last_accessed=timezone.now() - timedelta(days=600))
    fading = selectors.memory_fading(workspace=acme)
    assert [m.pk for m, _ in fading] == [memory.pk]
    assert fading[0][1] < 0.5


def test_a_daily_schedule_runs_the_cleanup(acme, migrated_schedules):
    from django_q.models import Schedule

    from memories import tasks

    schedule = Schedule.objects.get(func="memories.tasks.cleanup_all_workspaces")
    assert schedule.schedule_type == Schedule.DAILY
    memory = services.memory_remember(
        workspace=acme, item=RememberInput(text="A capture from long ago.", source="hook")
    ).memory
    Memory.objects.filter(pk=memory.pk).update(last_accessed=timezone.now() - timedelta(days=5000))
    assert tasks.cleanup_all_workspaces() == 1
    assert Memory.objects.get(pk=memory.pk).forgotten_at is not None


@pytest.mark.parametrize(("source", "count", "threshold"), [("hook", 0, 0.1), ("model", 3, 0.033)])
def test_the_day_it_falls_below_is_where_retention_crosses_the_threshold(source, count, threshold):
    then = timezone.now()
    below = decay.falls_below(
        last_accessed=then, access_count=count, source=source, threshold=threshold
    )
    assert below is not None

    def at(moment):
        return decay.retention(last_accessed=then, access_count=count, source=source, now=moment)

    assert at(below - timedelta(days=1)) > threshold > at(below + timedelta(days=1))
    assert decay.falls_below(last_accessed=then, access_count=0, source="hook", threshold=0) is None
