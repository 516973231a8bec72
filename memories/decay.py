"""Power-law forgetting, as in FlyMemory.

R = min((1 + Δt/τ)^-0.5 · (1 + 0.5·log2(1 + access_count)), 1)

Δt is the time since the memory was last accessed. τ is 30 days by default
(per workspace: `decay_tau_days`), doubled for what the model chose to
remember. With the exponent -0.5 the real half-life is 3τ: 90 days.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

SECONDS_PER_DAY = 86400.0


def tau_days(source: str, base_tau_days: float) -> float:
    return base_tau_days * (2.0 if source == "model" else 1.0)


# What the model chose to keep, or what was imported, is held to the lower cleanup
# bar (the `cleanup_threshold_valuable` knob), so it lasts longer.
VALUABLE_SOURCES = ("model", "import")


def cleanup_threshold(source: str, *, plain: float, valuable: float) -> float:
    """The retention under which the daily cleanup removes a memory of `source`, given the
    workspace's two thresholds (`cleanup_threshold`, `cleanup_threshold_valuable`)."""
    return valuable if source in VALUABLE_SOURCES else plain


def cleanup_threshold_sql(
    plain_param: str = "%s", valuable_param: str = "%s", alias: str = "m"
) -> str:
    """`cleanup_threshold` as a SQL expression over a memory row named `alias`."""
    sources = ", ".join(f"'{source}'" for source in VALUABLE_SOURCES)
    return f"CASE WHEN {alias}.source IN ({sources}) THEN {valuable_param} ELSE {plain_param} END"


def retention(
    *,
    last_accessed: datetime,
    access_count: int,
    source: str,
    now: datetime,
    base_tau_days: float = 30.0,
) -> float:
    elapsed_days = max(0.0, (now - last_accessed).total_seconds() / SECONDS_PER_DAY)
    tau = tau_days(source, base_tau_days)
    base = (1.0 + elapsed_days / tau) ** -0.5
    boost = 1.0 + 0.5 * math.log2(1 + access_count)
    return min(base * boost, 1.0)


def falls_below(
    *,
    last_accessed: datetime,
    access_count: int,
    source: str,
    threshold: float,
    base_tau_days: float = 30.0,
) -> datetime | None:
    """When `retention` (unused from now on) drops below `threshold`: the formula solved
    for Δt. None when it never does (a threshold of 0)."""
    if threshold <= 0:
        return None
    boost = 1.0 + 0.5 * math.log2(1 + access_count)
    elapsed_days = tau_days(source, base_tau_days) * max((boost / threshold) ** 2 - 1.0, 0.0)
    return last_accessed + timedelta(days=min(elapsed_days, 365_000))


def retention_sql(now_param: str = "%s", tau_param: str = "%s", alias: str = "m") -> str:
    """The same formula as a SQL expression over a memory row named `alias`."""
    m = alias
    return (
        f"LEAST(POWER(1 + GREATEST(EXTRACT(EPOCH FROM ({now_param} - {m}.last_accessed)), 0) / 86400.0"
        f" / ({tau_param} * CASE WHEN {m}.source = 'model' THEN 2.0 ELSE 1.0 END), -0.5)"
        f" * (1 + 0.5 * LOG(2, 1 + {m}.access_count)), 1.0)"
    )
