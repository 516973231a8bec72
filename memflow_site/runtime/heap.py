"""A warmed-up process's long-lived objects, set aside from the garbage collector.

A web process holds Django, torch, transformers, ONNX Runtime and the model:
about 550,000 objects that live as long as the process. CPython's cyclic
collector walks every one of them in each full (generation 2) collection,
with the GIL held: every request thread of the process stands still
meanwhile (docs/PERFORMANCE.md has the figures). Once the process is warm, `settle`
moves them to the permanent generation (`gc.freeze`), so a full collection
walks only what was made since, a few milliseconds' worth.

Frozen objects are still freed by reference counting when their last
reference goes; only cycles among them are never collected.
"""

from __future__ import annotations

import gc
import logging
import time

logger = logging.getLogger(__name__)


def settle() -> int:
    """Freeze what lives now; returns how many objects were frozen.

    Only the young generations are collected first: a full collection would
    itself be the pause this avoids, and the old generation holds next to no
    garbage this early.
    """
    started = time.monotonic()
    gc.collect(1)
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.info(
        "%d long-lived objects set aside from the collector (%.0f ms)",
        frozen,
        (time.monotonic() - started) * 1000,
    )
    return frozen
