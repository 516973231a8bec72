"""The dashboard's memories list: recall's real hits (a relevance floor), pages of
them or of the browsed list with each row's retention, and facets with counts.

Everything here is scoped by a workspace the caller already checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db.models import Count, Q

from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memories.decay import retention
from memories.models import Memory
from memories.rendering import age_label
from memories.selectors import (
    Hit,
    MemoryFilters,
    RecallResult,
    memory_forgotten_list,
    memory_list,
    memory_recall,
)
from memories.selectors.dashboard import hits_sorted, memory_browse

PAGE_SIZE = 50
# Recall's candidates for one search; the floor leaves the real ones, which page.
SEARCH_LIMIT = 200

# The relevance floor. Recall always fills its k places; below these, a hit
# shares nothing with the query but a stop word or a faint vector likeness
# (measured on tests/dashboard/search_corpus.py: "partition" gave 4 real hits
# and 46 at fused scores 0.003-0.07 with cosines under 0.23).
LEXICAL_MOST = 0.5  # holds this share of the query's idf mass: a real hit
LEXICAL_SOME = 0.1  # holds a real word of it: a hit if also loosely alike
COSINE_LOOSE = 0.1
COSINE_FLOOR = 0.25  # alike enough to be a paraphrase, whatever the words...
COSINE_NEAR_BEST = 0.6  # ...and near the best hit's likeness

FACETS = ("compartment", "source", "app")
FACET_LIMIT = 50


def real_hits(result: RecallResult) -> list[Hit]:
    """The hits above the relevance floor, in recall's order."""
    coverage = {s.id: s.coverage for s in result.fusion.candidates}
    best = max((h.cosine for h in result.hits), default=0.0)
    dense_floor = max(COSINE_FLOOR, COSINE_NEAR_BEST * best)
    # Without the dense arm (the embedder is not installed) cosines are all 0.
    loose = COSINE_LOOSE if best > 0 else float("-inf")

    def real(hit: Hit) -> bool:
        share = coverage.get(hit.memory.pk, 0.0)
        return (
            share >= LEXICAL_MOST
            or (share >= LEXICAL_SOME and hit.cosine >= loose)
            or (best > 0 and hit.cosine >= dense_floor)
        )

    return [h for h in result.hits if real(h)]


@dataclass(frozen=True)
class Row:
    memory: Memory
    score: float | None  # recall's fused score, when searching
    retention: float
    age: str
    updated_age: str
    forgotten_age: str = ""  # in the trash: how long ago it was forgotten
    author: str = ""  # who created it (its user), "" for the server's own

    @classmethod
    def of(cls, memory: Memory, score: float | None, kept: float, now: datetime) -> Row:
        return cls(
            memory=memory,
            score=score,
            retention=kept,
            age=age_label(memory.created_at, now),
            updated_age=age_label(memory.updated_at, now),
            forgotten_age=age_label(memory.forgotten_at, now) if memory.forgotten_at else "",
        )


@dataclass(frozen=True)
class Facet:
    value: str
    count: int
    chosen: bool


@dataclass
class ListPage:
    rows: list[Row]
    page: Page
    facets: dict[str, list[Facet]]
    status_counts: dict[str, int] = field(default_factory=dict)  # only when browsing


def memory_list_page(
    *,
    workspace: Workspace,
    filters: MemoryFilters,
    query: str,
    status: str,
    sort: str,
    page_number: int,
    now: datetime,
) -> ListPage:
    """One page of the list: the trash, real search hits when there is a query, else
    the browsed list."""
    if status == "forgotten":
        return _trash_page(workspace, filters, query, page_number, now)
    if query:
        return _search_page(workspace, filters, query, status, sort, page_number, now)
    qs = memory_browse(workspace=workspace, filters=filters, sort=sort, now=now)
    if status == "superseded":
        qs = qs.filter(valid_to__isnull=False)
    page = Paginator(qs, PAGE_SIZE).get_page(page_number)
    tau = float(knob(workspace, "decay_tau_days"))
    rows = _authored([Row.of(m, None, _retention(m, now, tau), now) for m in page.object_list])
    return ListPage(
        rows=rows,
        page=page,
        facets=memory_facets(workspace=workspace, filters=filters),
        status_counts=status_counts(workspace=workspace, filters=filters),
    )


def _search_page(
    workspace: Workspace,
    filters: MemoryFilters,
    query: str,
    status: str,
    sort: str,
    page_number: int,
    now: datetime,
) -> ListPage:
    # Recall runs without the faceted filters, so each facet can count the
    # real hits of its other values; the filters then apply through the same
    # queryset code the browsed list uses.
    unfaceted = replace(filters, compartment=None, source=None, app=None)
    result = memory_recall(
        workspace=workspace,
        query=query,
        k=SEARCH_LIMIT,
        filters=unfaceted,
        now=now,
        candidates=SEARCH_LIMIT,
    )
    hits = [h for h in real_hits(result) if status != "superseded" or h.memory.valid_to]
    ids = [h.memory.pk for h in hits]
    kept = set(
        memory_list(workspace=workspace, filters=filters)
        .filter(pk__in=ids)
        .values_list("pk", flat=True)
    )
    hits = hits_sorted([h for h in hits if h.memory.pk in kept], sort)
    page = Paginator(hits, PAGE_SIZE).get_page(page_number)
    rows = _authored([Row.of(h.memory, h.score, h.retention, now) for h in page.object_list])
    return ListPage(
        rows=rows, page=page, facets=memory_facets(workspace=workspace, filters=filters, within=ids)
    )


def _trash_page(
    workspace: Workspace, filters: MemoryFilters, query: str, page_number: int, now: datetime
) -> ListPage:
    """The forgotten memories the viewer may see, most recently forgotten first.

    Recall never reads tombstones, so a query here matches its words as written
    (each of them, in any case), as `substring` does; facets are not offered.
    """
    qs = memory_forgotten_list(workspace=workspace, viewer_id=filters.viewer_id)
    for word in [*query.split()[:WORDS_IN_TRASH_QUERY], filters.contains or ""]:
        if word:
            qs = qs.filter(text__icontains=word)
    page = Paginator(qs.select_related("forgotten_by"), PAGE_SIZE).get_page(page_number)
    rows = _authored([Row.of(m, None, 0.0, now) for m in page.object_list])
    return ListPage(
        rows=rows,
        page=page,
        facets={},
        status_counts=status_counts(workspace=workspace, filters=filters),
    )


def _authored(rows: list[Row]) -> list[Row]:
    """The rows with their creators' names, read in one query for the page."""
    ids = {r.memory.user_id for r in rows if r.memory.user_id}
    names: dict[int | None, str] = dict(
        get_user_model().objects.filter(pk__in=ids).values_list("pk", "username")
    )
    return [replace(r, author=names.get(r.memory.user_id, "")) for r in rows]


WORDS_IN_TRASH_QUERY = 8  # each word is a scan of the tombstones' text


def _retention(memory: Memory, now: datetime, tau: float) -> float:
    return retention(
        last_accessed=memory.last_accessed,
        access_count=memory.access_count,
        source=memory.source,
        now=now,
        base_tau_days=tau,
    )


def memory_facets(
    *, workspace: Workspace, filters: MemoryFilters, within: list[int] | None = None
) -> dict[str, list[Facet]]:
    """Per facet, the values that exist under the other filters, with their counts,
    most common first (one query a facet), and the chosen value even when none
    is left. `within`: only among these ids."""
    found: dict[str, list[Facet]] = {}
    for name in FACETS:
        others: dict[str, Any] = {name: None}
        qs = memory_list(workspace=workspace, filters=replace(filters, **others))
        if within is not None:
            qs = qs.filter(pk__in=within)
        rows = (
            qs.exclude(**{name: ""})
            .order_by()
            .values_list(name)
            .annotate(n=Count("id"))
            .order_by("-n", name)[:FACET_LIMIT]
        )
        chosen = getattr(filters, name)
        facets = [Facet(str(value), int(n), value == chosen) for value, n in rows]
        if chosen and not any(f.chosen for f in facets):
            facets.append(Facet(chosen, 0, True))
        found[name] = facets
    return found


def status_counts(*, workspace: Workspace, filters: MemoryFilters) -> dict[str, int]:
    """How many current and superseded memories the other filters leave (one query),
    and how many forgotten ones the viewer may see (the trash's own index)."""
    counts = (
        memory_list(workspace=workspace, filters=replace(filters, include_superseded=True))
        .order_by()
        .aggregate(
            current=Count("id", filter=Q(valid_to__isnull=True)),
            superseded=Count("id", filter=Q(valid_to__isnull=False)),
        )
    )
    return {
        "current": counts["current"],
        "superseded": counts["superseded"],
        "all": counts["current"] + counts["superseded"],
        "forgotten": memory_forgotten_list(
            workspace=workspace, viewer_id=filters.viewer_id
        ).count(),
    }
