"""What an import or an export did: counts by kind, and every item left out with its reason."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm


@dataclass(frozen=True)
class Skipped:
    item: str  # how the source names it: "flymemory #12", "archive/facts.md:3"
    reason: str


class Counts(Counter[str]):
    """A Counter that keeps no zero counts, so `report.added == {}` means nothing was added."""

    def __setitem__(self, key: str, value: int) -> None:
        if value:
            super().__setitem__(key, value)
        else:
            self.pop(key, None)


@dataclass
class ImportReport:
    """Counts by kind ("memories", "core lines", "supersede links", …).

    `added` is what this run wrote; `present` what an earlier run (or the
    workspace itself) already held, so a second run of the same import has
    an empty `added`. `skipped` names every item that was not stored and why;
    `warnings` items that were stored with a caveat.
    """

    format: str
    source: str
    workspace: str
    added: Counts = field(default_factory=Counts)
    present: Counts = field(default_factory=Counts)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def skip(self, item: str, reason: str) -> None:
        self.skipped.append(Skipped(item=item, reason=reason))

    def warn(self, item: str, reason: str) -> None:
        self.warnings.append(Skipped(item=item, reason=reason))

    @property
    def added_total(self) -> int:
        return sum(self.added.values())

    def render(self) -> str:
        lines = [f"Imported {self.source} ({self.format}) into workspace {self.workspace}."]
        lines.append(f"  added:   {_counts(self.added) or 'nothing'}")
        lines.append(f"  present: {_counts(self.present) or 'nothing'}")
        lines.append(f"  skipped: {len(self.skipped)}")
        lines += [f"    - {s.item}: {s.reason}" for s in self.skipped]
        if self.warnings:
            lines.append(f"  warnings: {len(self.warnings)}")
            lines += [f"    - {w.item}: {w.reason}" for w in self.warnings]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "workspace": self.workspace,
            "added": dict(sorted(self.added.items())),
            "present": dict(sorted(self.present.items())),
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.skipped],
            "warnings": [{"item": w.item, "reason": w.reason} for w in self.warnings],
            "notes": list(self.notes),
        }


@dataclass
class ExportReport:
    path: Path
    bytes: int
    counts: dict[str, int]
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [
            f"Wrote {self.path} ({self.bytes:,} bytes): "
            + (_counts(Counter(self.counts)) or "an empty workspace")
            + "."
        ]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "bytes": self.bytes,
            "counts": dict(self.counts),
            "notes": list(self.notes),
        }


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items()) if n)


class Progress:
    """A progress bar on stderr (tqdm), or nothing when `enabled` is false."""

    def __init__(self, *, enabled: bool, label: str, total: int | None = None):
        self._bar: tqdm[Any] | None = (
            tqdm(total=total, desc=label, unit="item", file=sys.stderr, leave=False)
            if enabled
            else None
        )

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def grow(self, n: int) -> None:
        """More work turned up (a second pass over links, say)."""
        if self._bar is not None and n:
            self._bar.total = (self._bar.total or 0) + n
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextmanager
def progress_bar(*, enabled: bool, label: str, total: int | None = None) -> Iterator[Progress]:
    bar = Progress(enabled=enabled, label=label, total=total)
    try:
        yield bar
    finally:
        bar.close()


def chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
