"""A warmed process's objects set aside from the cyclic collector (memflow_site.heap)."""

from __future__ import annotations

import gc
import weakref

import pytest

from contexts.runtime import heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def settled():
    frozen = heap.settle()
    yield frozen
    gc.unfreeze()  # the rest of the suite runs with an ordinary heap


def tracked(obj: object) -> bool:
    """Whether a full collection would walk `obj` (frozen objects it skips)."""
    return any(o is obj for o in gc.get_objects())


def test_what_lived_before_is_skipped_and_what_comes_after_is_not():
    before = [Node()]
    frozen = heap.settle()
    try:
        after = [Node()]
        # Other threads (the test server's, the embedder's) may allocate and be
        # frozen too: what settle reports is at least something, not an exact count.
        assert frozen > 0
        assert not tracked(before)
        assert tracked(after)
    finally:
        gc.unfreeze()
    assert tracked(before)


def test_cycles_made_after_settling_are_still_collected(settled):
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None


def test_frozen_objects_are_still_freed_when_their_last_reference_goes():
    node = Node()
    gone = weakref.ref(node)
    heap.settle()
    try:
        del node
        assert gone() is None
    finally:
        gc.unfreeze()
