"""Capacity kept for the hooks: reads that scan a library take turns.

A prompt hook has a budget of a few hundred milliseconds; a conflicts or
insights read may take a second on a large workspace, and eight of them at
once took every core from the hooks. So such reads (`heavy_read`) run
`MEMFLOW_HEAVY_READS` at a time per process, each statement under
`MEMFLOW_HEAVY_STATEMENT_MS`; a read that cannot start within
`MEMFLOW_HEAVY_WAIT_S` is refused with 503 `busy` and a `Retry-After`.
Hooks never take this gate, and run on threads of their own (asgi.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import OperationalError, connection, transaction

from contexts.errors import Busy, busy_from_database

_gate = threading.BoundedSemaphore(settings.MEMFLOW_HEAVY_READS)


@contextmanager
def heavy_read(what: str) -> Iterator[None]:
    """Run the body as one of the process's few heavy reads, under a statement timeout."""
    if not _gate.acquire(timeout=settings.MEMFLOW_HEAVY_WAIT_S):
        raise Busy(
            f"Too many {what} reads are running; try again shortly.",
            retry_after=max(1, int(settings.MEMFLOW_HEAVY_WAIT_S)),
        )
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                # SET LOCAL: gone with the transaction, so a pooled connection keeps its own.
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true)",
                    [f"{settings.MEMFLOW_HEAVY_STATEMENT_MS}ms"],
                )
            yield
    except OperationalError as exc:
        busy = busy_from_database(exc)
        if busy is not None and busy.code == "statement_timeout":
            raise Busy(
                f"The {what} read took longer than {settings.MEMFLOW_HEAVY_STATEMENT_MS:,} ms "
                "and was stopped; narrow it (a smaller limit) or try again later.",
                code="statement_timeout",
            ) from exc
        raise
    finally:
        _gate.release()
