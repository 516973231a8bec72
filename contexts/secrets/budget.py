"""How long a scan may take: one deadline shared by every scan of a request.

The filter is linear in its input, but a megabyte of near-matching text still
costs seconds; a request must not hold a server thread longer than its own
budget for it. `scan_budget()` opens a budget for what runs inside it (a hook
call opens one for all it scans); a scan outside any opens one of its own.
Text left when the budget is spent is not scanned, and so never kept or shown
as it is: `mask_secrets` cuts it out, `find_secret` calls it a credential.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

# The default, per request: MEMFLOW_SECRETS_BUDGET_MS overrides it (settings).
DEFAULT_BUDGET_MS = 2000

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "memflow_secrets_deadline", default=None
)


def budget_ms() -> int:
    """The configured budget in milliseconds (settings, when Django is configured)."""
    try:
        from django.conf import settings

        return int(getattr(settings, "MEMFLOW_SECRETS_BUDGET_MS", DEFAULT_BUDGET_MS))
    except ImportError:  # pragma: no cover - the package is used without Django
        return DEFAULT_BUDGET_MS
    except Exception:  # settings not configured (a script): the default
        return DEFAULT_BUDGET_MS


@contextlib.contextmanager
def scan_budget(ms: float | None = None) -> Iterator[None]:
    """Every scan inside shares one deadline, `ms` (or the configured budget) from now.

    Nested, the outer deadline stands: a request's budget is not renewed by a
    helper that opens one of its own.
    """
    if _deadline.get() is not None:
        yield
        return
    token = _deadline.set(time.monotonic() + (budget_ms() if ms is None else ms) / 1000)
    try:
        yield
    finally:
        _deadline.reset(token)


def deadline() -> float:
    """The deadline of the budget in force, or one that starts now."""
    current = _deadline.get()
    return current if current is not None else time.monotonic() + budget_ms() / 1000


def spent(at: float) -> bool:
    return time.monotonic() > at
