"""Per-workspace quotas: how many memories, and how many bytes, a workspace may store.

Knobs `quota_memories` and `quota_bytes` (0: unlimited, the default), registered
here on import. Bytes are
memory text (UTF-8) plus stored originals (compression refs). Each app that
stores something registers a meter in `AppConfig.ready()` (contexts imports
none of the apps built on it); `quota_check` sums them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contexts.errors import MemflowError
from contexts.models import Workspace
from contexts.tenancy.knobs import Knob, knob, register_group, register_knobs

QUOTAS = ("quota_memories", "quota_bytes")

register_group(
    "quotas",
    title="Quotas",
    description="How much this workspace may store; a write past a quota is refused whole.",
    order=90,
)
register_knobs(
    [
        Knob(
            name="quota_memories",
            group="quotas",
            kind="int",
            default=0,
            label="Memories stored at most",
            help="Stored memories, superseded ones included (they are kept as history).",
            unit="memories",
            minimum=0,
            maximum=1_000_000_000,
            zero_means="unlimited",
        ),
        Knob(
            name="quota_bytes",
            group="quotas",
            kind="int",
            default=0,
            label="Bytes stored at most",
            help="Bytes of memory text (UTF-8) plus stored tool outputs.",
            unit="bytes",
            minimum=0,
            maximum=10**15,
            zero_means="unlimited",
        ),
    ]
)


@dataclass(frozen=True)
class Usage:
    memories: int = 0
    stored_bytes: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.memories + other.memories, self.stored_bytes + other.stored_bytes)


# (workspace, seen_by) -> usage: with `seen_by`, what that user may see (another
# member's private entries left out); None, every row (what quotas are checked on).
Meter = Callable[[Workspace, int | None], Usage]
_meters: dict[str, Meter] = {}


def register_meter(name: str, meter: Meter) -> None:
    """Count what an app stores for a workspace (replaces a meter of the same name)."""
    _meters[name] = meter


class QuotaExceeded(MemflowError):
    status_code = 409
    code = "quota_exceeded"


def quota_limits(workspace: Workspace) -> dict[str, int]:
    """The quotas in force, by knob name; 0 is unlimited."""
    return {name: int(knob(workspace, name)) for name in QUOTAS}


def workspace_usage(*, workspace: Workspace, seen_by: int | None = None) -> Usage:
    total = Usage()
    for meter in _meters.values():
        total = total + meter(workspace, seen_by)
    return total


@dataclass(frozen=True)
class QuotaRow:
    """One quota as the settings page shows it: use against the limit (0: none)."""

    quota: str
    label: str
    use: int
    limit: int

    @property
    def percent(self) -> int | None:
        return min(100, round(100 * self.use / self.limit)) if self.limit else None


def quota_report(*, workspace: Workspace, seen_by: int | None) -> list[QuotaRow]:
    """The quotas as `seen_by` is shown them: another member's private entries are
    not counted in the use (their existence is theirs to tell)."""
    limits = quota_limits(workspace)
    use = workspace_usage(workspace=workspace, seen_by=seen_by)
    return [
        QuotaRow("quota_memories", "Memories", use.memories, limits["quota_memories"]),
        QuotaRow("quota_bytes", "Stored bytes", use.stored_bytes, limits["quota_bytes"]),
    ]


def quota_check(*, workspace: Workspace, memories: int = 0, stored_bytes: int = 0) -> None:
    """Refuse, whole, a write that would add `memories` and `stored_bytes` past a quota.

    What is added is counted before dedupe (a write that could pass the quota is
    refused), so call it before writing; under the workspace lock where the write
    takes one, so concurrent writes cannot pass it together. Costs nothing while
    both quotas are 0.
    """
    limits = quota_limits(workspace)
    if not any(limits.values()):
        return
    use = workspace_usage(workspace=workspace)
    for quota, used, adding, unit in (
        ("quota_memories", use.memories, memories, "memories"),
        ("quota_bytes", use.stored_bytes, stored_bytes, "bytes"),
    ):
        limit = limits[quota]
        if limit and adding and used + adding > limit:
            raise QuotaExceeded(
                f"This workspace stores {used:,} {unit} of its {quota} of {limit:,}; "
                f"this write adds {adding:,}. Forget entries or ask an owner to raise the quota.",
                extra={"quota": quota, "use": used, "adding": adding, "limit": limit},
            )
