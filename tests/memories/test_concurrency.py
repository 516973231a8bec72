"""Concurrent writers through real, separate database connections."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from memories import services
from memories.models import Memory
from memories.services import RememberInput

pytestmark = pytest.mark.django_db(transaction=True)


def _in_thread(fn, *args):
    try:
        return fn(*args)
    finally:
        connection.close()


def test_concurrent_state_writes_keep_one_current_value(acme):
    from memories.embeddings import get_embedder

    get_embedder()  # load once, before the threads race

    def write(i: int):
        return services.memory_remember(
            workspace=acme,
            item=RememberInput(
                text=f"The build runner is runner-{i}",
                state_key="ci.runner",
                state_value=f"runner-{i}",
            ),
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: _in_thread(write, i), range(16)))
    assert all(r.outcome == "created" for r in results)
    chain = list(
        Memory.objects.filter(workspace=acme, state_key="ci.runner").order_by("valid_from", "id")
    )
    assert len(chain) == 16
    assert sum(m.valid_to is None for m in chain) == 1
    # Every closed entry points at the next one: a single unbroken chain.
    for older, newer in itertools.pairwise(chain):
        assert older.superseded_by_id == newer.pk


def test_concurrent_identical_remembers_fold_into_one(acme):
    from memories.embeddings import get_embedder

    get_embedder()

    def write(_: int):
        return services.memory_remember(
            workspace=acme, item=RememberInput(text="The monorepo uses Bazel 7.")
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: _in_thread(write, i), range(12)))
    assert sorted(r.outcome for r in results).count("created") == 1
    memory = Memory.objects.get(workspace=acme)
    assert memory.strength == 12
