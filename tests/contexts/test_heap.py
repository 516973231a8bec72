"""A warmed process's heap set aside from the cyclic collector (memflow_site.runtime.heap).

What settling saves (full collections that no longer walk the model) is a
pause length, measured by the benches; `memflow serve` settling once warm is
checked by tests/hooks/test_hook_cli.py. What a user would notice going
wrong is memory: garbage made after settling must still be collected.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from memflow_site.runtime import heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def settled() -> Iterator[int]:
    frozen = heap.settle()
    yield frozen
    gc.unfreeze()  # the rest of the suite runs with an ordinary heap


def cycle() -> weakref.ref[Node]:
    """A reference cycle nothing else holds: only the cyclic collector frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settling_reports_what_it_set_aside(settled: int) -> None:
    assert settled > 0


def test_garbage_made_after_settling_is_still_collected_on_its_own(settled: int) -> None:
    gone = cycle()
    # No explicit gc.collect(): allocations alone must trigger the collector, as
    # they do between requests. A count of allocations bounds the wait, not a clock.
    for _ in range(1_000_000):
        if gone() is None:
            break
        cycle()
    assert gone() is None, "settling left the cyclic collector off"
