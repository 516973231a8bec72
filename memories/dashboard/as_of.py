"""The memory page's "value at a date": which entry of the supersede chain was current then."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from memories.models import Memory


@dataclass(frozen=True)
class ValueAt:
    asked: str  # as typed, to fill the form again
    when: datetime | None = None
    entry: Memory | None = None  # None: nothing of this chain was current then
    error: str = ""


def _parse(raw: str) -> datetime | None:
    try:
        when = parse_datetime(raw)
        if when is None and (day := parse_date(raw)) is not None:
            when = datetime(day.year, day.month, day.day, 23, 59, 59)  # the end of that day
    except ValueError:
        return None
    if when is not None and timezone.is_naive(when):
        when = timezone.make_aware(when, UTC)
    return when


def value_at(chain: Sequence[Memory], raw: str | None) -> ValueAt | None:
    """The chain's entry current at `raw` (ISO 8601 date or time); None when not asked."""
    if not raw or not raw.strip():
        return None
    asked = raw.strip()[:40]
    when = _parse(asked)
    if when is None:
        return ValueAt(asked=asked, error="Give a date (2026-03-01) or a time (2026-03-01T14:00).")
    for entry in chain:
        if entry.valid_from <= when and (entry.valid_to is None or entry.valid_to > when):
            return ValueAt(asked=asked, when=when, entry=entry)
    return ValueAt(asked=asked, when=when)
