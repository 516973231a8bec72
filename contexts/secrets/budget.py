"""How long scanning may take: one budget of scan time shared by every scan of a request.

The filter is linear in its input, but a megabyte of near-matching text still
costs a good part of a second; a request must not hold a server thread longer
than its own budget for it. `scan_budget()` opens a budget for what runs
inside it (a hook call opens one for all it scans); a scan outside any opens
one of its own. Only time spent scanning is counted: a slow database or a
cold start elsewhere in the request takes nothing from it. Text left when it
is spent is not scanned, and so never kept or shown as it is: `mask_secrets`
cuts it out, `find_secret` calls it a credential.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass

# The default, per request: the hooks' own budget (MEMFLOW_HOOK_TIMEOUT, 1 s), past which
# a hook client has given up waiting. MEMFLOW_SECRETS_BUDGET_MS overrides it (settings).
DEFAULT_BUDGET_MS = 1000


@dataclass
class Budget:
    remaining: float  # seconds of scanning left

    @contextlib.contextmanager
    def spending(self) -> Iterator[float]:
        """The deadline of one scan; the time it took comes off `remaining`."""
        started = time.monotonic()
        try:
            yield started + self.remaining
        finally:
            self.remaining -= time.monotonic() - started

    @property
    def spent(self) -> bool:
        return self.remaining <= 0


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "memflow_secrets_budget", default=None
)


def budget_ms() -> int:
    """The configured budget in milliseconds (settings, when Django is configured)."""
    try:
        from django.conf import settings

        return int(getattr(settings, "MEMFLOW_SECRETS_BUDGET_MS", DEFAULT_BUDGET_MS))
    except Exception:  # no Django, or its settings not configured (a script): the default
        return DEFAULT_BUDGET_MS


@contextlib.contextmanager
def scan_budget(ms: float | None = None) -> Iterator[None]:
    """Every scan inside shares one budget of `ms` (or the configured) milliseconds.

    Nested, the outer budget stands: a request's budget is not renewed by a
    helper that opens one of its own.
    """
    if _current.get() is not None:
        yield
        return
    token = _current.set(Budget((budget_ms() if ms is None else ms) / 1000))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Budget:
    """The budget in force, or a fresh one for a scan outside any."""
    return _current.get() or Budget(budget_ms() / 1000)


def spent(at: float) -> bool:
    return time.monotonic() > at
