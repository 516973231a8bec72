"""Helpers every dashboard view shares (all apps import these)."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required  # noqa: F401  (re-exported for apps)
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django_htmx.middleware import HtmxDetails
from psycopg import Error as PsycopgError

from contexts.errors import Busy, Forbidden, NotFound, busy_from_database
from contexts.models import Membership, Workspace
from contexts.tenancy.selectors import Access, workspace_access

logger = logging.getLogger(__name__)
T = TypeVar("T")


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def workspace_for_page(
    request: HttpRequest, slug: str, access: Access = Access.READ
) -> tuple[Workspace, Membership]:
    """The workspace for a dashboard page, checked like the API checks it."""
    try:
        return workspace_access(user=request.user, slug=slug, access=access)
    except NotFound:
        raise Http404("No such workspace.") from None
    except Forbidden as exc:
        raise PermissionDenied(exc.detail) from None


def page_of(request: HttpRequest, items: Any, per_page: int) -> Page:
    """One page of `items` (`?page=`); a page number out of range gives the last page."""
    return Paginator(items, per_page).get_page(request.GET.get("page") or 1)


# --- panels computed one by one ------------------------------------------------------

UNAVAILABLE = "Couldn't compute this now: the server is busy. Reload the page in a moment."


class Panels:
    """The parts of a page that each ask the database on their own (the overview).

    A part the database could not compute now (its scan hit the time limit,
    waited too long for a lock, or took no turn among the heavy reads) is
    left out (None) with `UNAVAILABLE` in `unavailable[name]`, and the rest
    of the page still renders. Any other error is raised as usual.
    """

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def compute(self, name: str, compute: Callable[[], T]) -> T | None:
        try:
            return compute()
        except (Busy, DatabaseError, PsycopgError) as exc:
            busy = exc if isinstance(exc, Busy) else busy_from_database(exc)
            if busy is None:
                raise
            logger.warning("panel %s left out: %s (%s)", name, busy.code, exc)
            self.unavailable[name] = UNAVAILABLE
            return None


# --- time ranges ---------------------------------------------------------------------

RANGES = (7, 30, 90)


@dataclass(frozen=True)
class RangeChoice:
    days: int
    url: str
    current: bool


def range_days(request: HttpRequest, default: int = 30) -> tuple[int, list[RangeChoice]]:
    """`?days=` (one of RANGES, else `default`) and a link to each range that keeps
    the page's other query parameters (a paging position restarts)."""
    asked = request.GET.get("days", "")
    days = int(asked) if asked.isdigit() and int(asked) in RANGES else default
    choices = []
    for n in RANGES:
        query = request.GET.copy()
        query["days"] = str(n)
        query.pop("page", None)
        choices.append(RangeChoice(days=n, url=f"?{query.urlencode()}", current=n == days))
    return days, choices


def daily_points(
    counts: Mapping[date, float], *, days: int, today: date
) -> list[tuple[date, float]]:
    """(day, value) for each of the last `days` days up to `today`, zeros filled in."""
    start = today - timedelta(days=days - 1)
    return [
        (start + timedelta(days=i), counts.get(start + timedelta(days=i), 0)) for i in range(days)
    ]


def not_allowed(request: HtmxHttpRequest, *methods: str) -> HttpResponse | None:
    """405 for other methods; called after the workspace check, so outsiders see 404 first."""
    if request.method not in methods:
        return HttpResponseNotAllowed(list(methods))
    return None


# --- line diffs -------------------------------------------------------------------------
#
# Revisions (core memory, skill bodies) are shown as line diffs computed
# here; the template renders each line through autoescape, so a diff of
# agent text is as inert as the text.


@dataclass(frozen=True)
class DiffLine:
    mark: str  # "+" added, "-" removed, " " unchanged, "…" unchanged lines left out
    text: str

    @property
    def kind(self) -> str:
        return {"+": "added", "-": "removed", " ": "same"}.get(self.mark, "gap")


@dataclass(frozen=True)
class Diff:
    lines: tuple[DiffLine, ...]
    added: int
    removed: int

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.removed)


def line_diff(before: str, after: str, *, context: int = 2) -> Diff:
    """`before` → `after` line by line, with `context` unchanged lines around each change."""
    old, new = before.splitlines(), after.splitlines()
    lines: list[DiffLine] = []
    added = removed = 0
    opcodes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            same = old[i1:i2]
            head = same[:context] if index > 0 else []
            tail = same[-context:] if index < len(opcodes) - 1 else []
            if len(same) <= len(head) + len(tail) + 1:
                lines.extend(DiffLine(" ", t) for t in same)
                continue
            lines.extend(DiffLine(" ", t) for t in head)
            hidden = len(same) - len(head) - len(tail)
            lines.append(DiffLine("…", f"{hidden} unchanged line{'s' if hidden != 1 else ''}"))
            lines.extend(DiffLine(" ", t) for t in tail)
            continue
        lines.extend(DiffLine("-", t) for t in old[i1:i2])
        lines.extend(DiffLine("+", t) for t in new[j1:j2])
        removed += i2 - i1
        added += j2 - j1
    return Diff(lines=tuple(lines), added=added, removed=removed)
