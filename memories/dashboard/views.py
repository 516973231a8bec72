"""Dashboard pages of the `memories` app: memories, one memory, core memory,
states and the ledger."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from contexts.dashboard import charts
from contexts.dashboard import selectors as dash_selectors
from contexts.dashboard.common import (
    HtmxHttpRequest,
    Panels,
    daily_points,
    line_diff,
    not_allowed,
    page_of,
    range_days,
    workspace_for_page,
)
from contexts.errors import MemflowError
from contexts.flowctx import selectors as flowctx_selectors
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, Origin, audit_list
from contexts.tenancy.auth import request_user
from contexts.tenancy.knobs import knob
from contexts.tenancy.selectors import Access
from memories import core, rendering, selectors, services, session_log
from memories.dashboard.as_of import value_at
from memories.dashboard.forms import (
    SORTS,
    ConsolidateForm,
    CoreEditForm,
    CoreMoveForm,
    ForgetForm,
    MemoryEditForm,
    MemorySearchForm,
    SessionEventFilterForm,
    SupersedeForm,
)
from memories.decay import cleanup_threshold, falls_below, retention
from memories.models import CoreMemory, DedupeEvent, Memory
from memories.selectors import dashboard as memory_dash
from memories.selectors import listing as list_selectors


def _list_filters(
    data: dict[str, Any], now: datetime, viewer_id: int | None
) -> selectors.MemoryFilters:
    within, older = data.get("within"), data.get("older")
    return selectors.MemoryFilters(
        compartment=data.get("compartment") or None,
        source=data.get("source") or None,
        app=data.get("app") or None,
        state_key=(data.get("state_key") or "").strip() or None,
        since=now - timedelta(days=int(within)) if within else None,
        until=now - timedelta(days=int(older)) if older else None,
        include_superseded=(data.get("status") or "current") != "current",
        viewer_id=viewer_id,
        contains=(data.get("substring") or "").strip() or None,
    )


_FILTERS = ("substring", "compartment", "source", "app", "state_key", "within", "older")


def _consolidate(
    request: HtmxHttpRequest, workspace: Any, form: ConsolidateForm
) -> tuple[Memory | None, str]:
    """The list's consolidate form: the conclusion, or why there is none."""
    try:
        if not form.is_valid():
            raise services.Invalid("The conclusion is too long.", code="invalid")
        conclusion = services.memory_consolidate(
            workspace=workspace,
            ids=form.ids(),
            conclusion=form.cleaned_data["conclusion"],
            compartment=form.cleaned_data["compartment"],
            user=request_user(request),
            actor=Actor.for_request(request, origin=Origin.DASHBOARD),
        )
    except MemflowError as exc:
        return None, exc.detail
    evidence = ", ".join(f"#{i}" for i in sorted(set(form.ids())))
    messages.success(
        request, f"Consolidated {evidence} into #{conclusion.pk}; they stay as its evidence."
    )
    return conclusion, ""


@login_required
def memory_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Search, filter and sort the library; writers tick entries and consolidate them."""
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    form = MemorySearchForm(request.GET or None)
    form.is_valid()  # a bad value (say ?page=0) drops out of cleaned_data; the rest still apply
    data: dict[str, Any] = getattr(form, "cleaned_data", {})
    status = data.get("status") or "current"
    sort = data.get("sort") or ""
    now = timezone.now()
    consolidate = ConsolidateForm()
    consolidate_error = ""
    # Ticked ids ride along with every search and page (`?ids=`), so a
    # selection can gather memories from several searches.
    selected = set(ConsolidateForm(request.GET).ids())
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.WRITE)
        consolidate = ConsolidateForm(request.POST)
        selected = set(consolidate.ids())
        done, consolidate_error = _consolidate(request, workspace, consolidate)
        if done is not None:
            return redirect("memory-detail", slug=workspace.slug, memory_id=done.pk)
    query = (data.get("q") or "").strip()
    listing = list_selectors.memory_list_page(
        workspace=workspace,
        filters=_list_filters(data, now, request.user.pk),
        query=query,
        status=status,
        sort=sort,
        page_number=data.get("page") or 1,
        now=now,
    )
    marks = rendering.marked_terms(query, data.get("substring") or "")
    context = {
        "workspace": workspace,
        "membership": membership,
        "form": form,
        "query": query,
        "sort": sort,
        "sort_label": dict(SORTS).get(sort, ""),
        "rows": [
            (r, rendering.highlighted(r.memory.text, marks), r.memory.pk in selected)
            for r in listing.rows
        ],
        "listing": listing,
        "search_limit": list_selectors.SEARCH_LIMIT,
        "status": status,
        "statuses": [
            (v, listing.status_counts.get(v)) for v in ("current", "superseded", "all", "forgotten")
        ],
        "filtered": any(data.get(k) for k in _FILTERS),
        "state_keys": memory_dash.state_key_names(workspace=workspace),
        "consolidate_form": consolidate,
        "consolidate_error": consolidate_error,
        "selected": sorted(selected),
        "ticked_elsewhere": [
            m
            for i, m in sorted(
                memory_dash.memories_by_id(
                    workspace=workspace,
                    ids=selected - {r.memory.pk for r in listing.rows},
                    viewer_id=request.user.pk,
                ).items()
            )
        ],
    }
    if request.htmx and request.method == "GET":
        # The table, and the facets (their counts follow the search) out of band.
        return render(request, "memories/_memory_list_swap.html", context)
    return render(
        request, "memories/memory_list.html", context, status=400 if consolidate_error else 200
    )


DECAY_AHEAD_DAYS = 365
DECAY_MARKS = 500  # the newest ledger marks pinned on the decay chart's time axis


def _decay_chart(memory: Memory, workspace: Workspace, now: datetime) -> dict[str, Any]:
    """Retention from the last access to a year ahead, by the ranking's own formula,
    with the memory's ledger marks on the time axis and the cleanup threshold."""
    tau = float(knob(workspace, "decay_tau_days"))
    threshold = cleanup_threshold(
        memory.source,
        plain=float(knob(workspace, "cleanup_threshold")),
        valuable=float(knob(workspace, "cleanup_threshold_valuable")),
    )
    start, end = memory.last_accessed, now + timedelta(days=DECAY_AHEAD_DAYS)
    steps = 120
    moments = sorted({start + (end - start) * i / steps for i in range(steps + 1)} | {now})
    samples = [
        (t, retention(last_accessed=memory.last_accessed, access_count=memory.access_count,
                      source=memory.source, now=t, base_tau_days=tau))
        for t in moments
    ]  # fmt: skip
    marks = memory_dash.memory_access_history(workspace=workspace, memory=memory)[:DECAY_MARKS]
    chart = charts.line_chart(
        samples,
        now=now,
        marks=[(m.at, f"{m.kind} {m.at:%Y-%m-%d %H:%M} UTC", m.kind) for m in marks],
        threshold=None if memory.pinned else threshold,
    )
    below = falls_below(
        last_accessed=memory.last_accessed, access_count=memory.access_count,
        source=memory.source, threshold=threshold, base_tau_days=tau,
    )  # fmt: skip
    return {
        "chart": chart,
        "threshold": threshold,
        "below": below,
        "below_passed": below is not None and below <= now,
        "marks": len(marks),
    }


def _chain(memory: Memory) -> list[Memory]:
    """The supersede chain through this memory, oldest first."""
    older: list[Memory] = []
    current: Memory | None = memory
    seen = {memory.pk}
    while True:
        previous = (
            Memory.objects.filter(superseded_by=current, forgotten_at__isnull=True)
            .order_by("-valid_to")
            .first()
            if current
            else None
        )
        if previous is None or previous.pk in seen:
            break
        older.append(previous)
        seen.add(previous.pk)
        current = previous
    newer: list[Memory] = []
    current = memory.superseded_by
    while current is not None and current.pk not in seen:
        newer.append(current)
        seen.add(current.pk)
        current = current.superseded_by
    return [*reversed(older), memory, *newer]


HISTORY_PER_PAGE = 50
AUDIT_ROWS_SHOWN = 100


@login_required
def memory_detail(request: HtmxHttpRequest, slug: str, memory_id: int) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    try:
        memory = selectors.memory_get(
            workspace=workspace, memory_id=memory_id, forgotten=True, viewer_id=request.user.pk
        )
    except MemflowError:
        purged = audit_list(workspace=workspace, target=f"memory:{memory_id}")
        # Someone else's private entry is not purged, and its trail keeps texts.
        hidden = Memory.objects.filter(workspace=workspace, pk=memory_id).exists()
        if hidden or not purged.exists():
            raise Http404("No such memory.") from None
        # Purged: the row is gone, its audit rows (without the texts) say what happened.
        return render(
            request,
            "memories/memory_purged.html",
            {
                "workspace": workspace,
                "membership": membership,
                "memory_id": memory_id,
                "audit": purged[:AUDIT_ROWS_SHOWN],
            },
            status=404,
        )
    tau = float(knob(workspace, "decay_tau_days"))
    now = timezone.now()
    history = page_of(
        request,
        session_log.memory_access_events(workspace=workspace, memory=memory),
        HISTORY_PER_PAGE,
    )
    for row in history.object_list:  # why it ranked, as recorded when it was injected
        row.why = session_log.access_row_why(row)
    context = {
        "workspace": workspace,
        "membership": membership,
        "memory": memory,
        "age": rendering.age_label(memory.created_at, now),
        "retention": retention(
            last_accessed=memory.last_accessed,
            access_count=memory.access_count,
            source=memory.source,
            now=now,
            base_tau_days=tau,
        ),
        "decay": _decay_chart(memory, workspace, now),
        "chain": (chain := [m for m in _chain(memory) if selectors.is_visible(m, request.user.pk)]),
        "value_at": value_at(chain, request.GET.get("as_of")),
        "evidence": Memory.objects.filter(
            selectors.visible_to(request.user.pk), conclusion_links__conclusion=memory
        ),
        "conclusions": Memory.objects.filter(
            selectors.visible_to(request.user.pk), evidence_links__evidence=memory
        ),
        "folds": DedupeEvent.objects.filter(memory=memory).order_by("-created_at")[:20],
        "access": memory_dash.memory_access_summary(workspace=workspace, memory=memory),
        "history": history,
        "edit_form": MemoryEditForm(
            initial={"text": memory.text, "compartment": memory.compartment}
        ),
        "supersede_form": SupersedeForm(auto_id="supersede_%s"),  # ids unique beside the edit form
        "forget_form": ForgetForm(),
        "audit": audit_list(workspace=workspace, target=f"memory:{memory.pk}")[:AUDIT_ROWS_SHOWN],
        "purge_due": selectors.memory_purge_due(memory=memory),
    }
    return render(request, "memories/memory_detail.html", context)


@login_required
def core_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused  # changes go to core-action
    user = request_user(request)
    context = _core_context(workspace, membership, user, show_all=request.GET.get("all", ""))
    return render(request, "memories/core_detail.html", context)


CORE_REVISIONS_SHOWN = 20  # per document, unless ?all=<scope> asks for (up to) all of them
CORE_REVISIONS_MAX = 1000


def _core_context(
    workspace: Any, membership: Any, user: Any, show_all: str = "", **extra: Any
) -> dict[str, Any]:
    documents = []
    for scope in (CoreMemory.Scope.USER, CoreMemory.Scope.WORKSPACE):
        owner = user if scope == CoreMemory.Scope.USER else None
        view = core.core_view(scope=scope, user=owner, workspace=workspace)
        revisions = core.core_revisions(scope=scope, workspace=workspace, user=owner)
        documents.append(
            {
                "scope": scope,
                "label": core.LABELS[scope],
                "view": view,
                "revision_count": len(revisions),
                "all_shown": show_all == scope,
                # Each revision's own change, and what reverting to it would change now.
                "revisions": [
                    {
                        "revision": r,
                        "diff": line_diff(r.before, r.after),
                        "revert": line_diff(view.content, r.after),
                    }
                    for r in revisions[
                        : CORE_REVISIONS_MAX if show_all == scope else CORE_REVISIONS_SHOWN
                    ]
                ],
            }
        )
    return {
        "workspace": workspace,
        "membership": membership,
        "documents": documents,
        "edit_form": CoreEditForm(),
        "move_form": CoreMoveForm(),
        **extra,
    }


@login_required
def core_action(request: HtmxHttpRequest, slug: str, target: str, action: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug, Access.WRITE)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    user = request_user(request)
    try:
        scope = core.scope_for(target)
    except MemflowError:  # not `user` or `memory`: no such page (it was a 500)
        raise Http404("No such core document.") from None
    owner = user if scope == CoreMemory.Scope.USER else None
    actor = Actor.for_request(request, origin=Origin.DASHBOARD)
    error: dict[str, Any] | None = None
    try:
        if action == "edit":
            form = CoreEditForm(request.POST)
            if not form.is_valid():
                raise services.Invalid("Choose add, replace or remove.", code="invalid")
            edit = core.core_edit(
                scope=scope,
                action=form.cleaned_data["action"],
                workspace=workspace,
                user=owner,
                content=form.cleaned_data["content"],
                old_text=form.cleaned_data["old_text"],
                actor=actor,
            )
            messages.success(request, f"{core.LABELS[scope]}: {edit.outcome}.")
        elif action == "move":
            move = CoreMoveForm(request.POST)
            if not move.is_valid():
                raise services.Invalid("Give the line and a category.", code="invalid")
            memory = core.core_move_to_archive(
                scope=scope,
                workspace=workspace,
                user=owner,
                old_text=move.cleaned_data["old_text"],
                category=move.cleaned_data["category"],
                actor=actor,
            )
            messages.success(
                request, f"Moved to the archive as memory #{memory.pk} ({memory.compartment})."
            )
        elif action == "revert":
            version = int(request.POST.get("version", "0") or 0)
            core.core_revert(
                scope=scope, workspace=workspace, user=owner, version=version, actor=actor
            )
            messages.success(request, f"{core.LABELS[scope]} reverted to version {version}.")
        else:
            raise Http404("No such action.")
    except MemflowError as exc:
        # What was typed comes back in the form, so a refusal never costs the text.
        typed = {k: request.POST.get(k, "") for k in ("action", "content", "old_text", "category")}
        error = {
            "scope": scope,
            "detail": exc.detail,
            "code": exc.code,
            "typed": typed,
            **exc.extra,
        }
    context = _core_context(workspace, membership, user, error=error)
    # Shown at the page's own address, so a reload never posts the change again.
    context["canonical_url"] = reverse("core-detail", args=[workspace.slug]) + f"#core-{scope}"
    status = 400 if error else 200
    return render(request, "memories/core_detail.html", context, status=status)


# --- states ---------------------------------------------------------------------------------

STATES_PER_PAGE = 50


@login_required
def state_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    query = (request.GET.get("q") or "").strip()[:200]
    keys = selectors.state_keys(workspace=workspace).defer("embedding", "lex")
    if query:
        keys = keys.filter(state_key__icontains=query)
    page = page_of(request, keys, STATES_PER_PAGE)
    histories = memory_dash.state_histories(
        workspace=workspace, keys=[m.state_key for m in page.object_list]
    )
    context = {
        "workspace": workspace,
        "membership": membership,
        "query": query,
        "page": page,
        "rows": [(m, histories.get(m.state_key, [m])) for m in page.object_list],
    }
    if request.htmx:
        return render(request, "memories/state_list.html#state-table", context)
    return render(request, "memories/state_list.html", context)


# --- the ledger -------------------------------------------------------------------------------


@login_required
def ledger_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    days, ranges = range_days(request)
    today, start = dash_selectors.recent_days(days=days)
    daily = memory_dash.ledger_daily(workspace=workspace, since=start, viewer_id=request.user.pk)
    rows = [
        (day, daily.get(day) or memory_dash.LedgerRow(label=day.isoformat(), injected=0, used=0))
        for day, _ in daily_points({}, days=days, today=today)
    ]
    summary = selectors.ledger_summary(workspace=workspace, viewer_id=request.user.pk, top=0)
    hottest = selectors.ledger_hottest(workspace=workspace, viewer_id=request.user.pk, limit=20)
    never = memory_dash.ledger_never_used(workspace=workspace, viewer_id=request.user.pk, limit=20)
    texts = memory_dash.memories_by_id(
        workspace=workspace,
        ids=[h.memory_id for h in hottest] + [n.memory_id for n in never],
        viewer_id=request.user.pk,
    )
    by_source = memory_dash.ledger_by_source(
        workspace=workspace, viewer_id=request.user.pk, since=start
    )
    context = {
        "workspace": workspace,
        "membership": membership,
        "days": days,
        "ranges": ranges,
        "summary": summary,
        "daily_rows": [r for _, r in rows if r.injected],
        "injected_chart": charts.bar_chart([(d, float(r.injected)) for d, r in rows]),
        "rate_chart": charts.bar_chart([(d, r.rate) for d, r in rows], percent=True),
        "by_source": by_source,
        "source_chart": charts.rate_chart(
            [(r.label, r.rate, f"{r.used} of {r.injected} used") for r in by_source]
        ),
        "hottest": [(h, texts.get(h.memory_id)) for h in hottest],
        "never_used": [(n, texts.get(n.memory_id)) for n in never],
    }
    return render(request, "memories/ledger_detail.html", context)


# --- pages that draw on both apps: the overview and what a session saw ----------------------
# They live here, not in `contexts`, because `contexts` never imports the
# apps built on it.

# --- overview -------------------------------------------------------------------------------


@login_required
def workspace_overview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    now = timezone.now()
    days, ranges = range_days(request)
    # Each panel asks the database on its own: one whose scan runs out of time
    # under load (a large import) says so, and the rest of the page still renders.
    panels = Panels()
    viewer = request.user.pk
    context = {
        "workspace": workspace,
        "membership": membership,
        "days": days,
        "ranges": ranges,
        "stats": panels.compute(
            "stats", lambda: selectors.memory_stats(workspace=workspace, viewer_id=viewer, now=now)
        ),
        "counts": panels.compute(
            "counts", lambda: dash_selectors.workspace_counts(workspace=workspace)
        ),
        "core_view": panels.compute(
            "core",
            lambda: core.core_view(
                scope=CoreMemory.Scope.WORKSPACE, user=None, workspace=workspace
            ),
        ),
        **(panels.compute("growth", lambda: _overview_growth(workspace, days, now, viewer)) or {}),
        "ledger": panels.compute(
            "ledger", lambda: selectors.ledger_summary(workspace=workspace, viewer_id=viewer, top=5)
        ),
        "recent_sessions": panels.compute(
            "sessions",
            lambda: list(dash_selectors.session_list_annotated(workspace=workspace)[:8]),
        ),
        "conflicts": panels.compute(
            "conflicts",
            lambda: selectors.memory_conflict_clusters(
                workspace=workspace, limit=10, viewer_id=viewer
            ),
        ),
        "fading": panels.compute(
            "fading",
            lambda: selectors.memory_fading(
                workspace=workspace, limit=10, now=now, viewer_id=viewer
            ),
        ),
        "unavailable": panels.unavailable,
    }
    return render(request, "contexts/workspace_overview.html", context)


def _overview_growth(
    workspace: Workspace, days: int, now: datetime, viewer: int | None
) -> dict[str, Any]:
    """The growth panel: memories in all (as `viewer` may count them), written and
    sessions started, per day."""
    today, start = dash_selectors.recent_days(days=days, now=now)
    created = memory_dash.memory_daily_counts(workspace=workspace, since=start, viewer_id=viewer)
    running = memory_dash.memory_count_before(workspace=workspace, before=start, viewer_id=viewer)
    cumulative = []
    for day, n in daily_points(created, days=days, today=today):
        running += int(n)
        cumulative.append((day, float(running)))
    sessions = dash_selectors.session_daily_counts(workspace=workspace, since=start)
    return {
        "created_chart": charts.bar_chart(daily_points(created, days=days, today=today)),
        "total_chart": charts.bar_chart(cumulative),
        "sessions_chart": charts.bar_chart(daily_points(sessions, days=days, today=today)),
        "created_in_window": sum(created.values()),
        "sessions_in_window": sum(sessions.values()),
    }


# --- sessions -------------------------------------------------------------------------------

EVENTS_PER_PAGE = 100
LEDGER_ROWS = 500  # a session's ledger table; the rest is counted, not listed
PAYLOAD_CHARS = 20_000


def _tree_spans(items: list[dash_selectors.TreeNode]) -> list[charts.Span]:
    """The summary forest as the chart's spans: turns across, depth up."""
    return [
        charts.Span(
            key=item.node.node_id,
            start=item.node.start_turn,
            end=item.node.end_turn,
            level=item.node.depth,
            title=f"{item.node.node_id}: turns {item.node.start_turn} to {item.node.end_turn}, "
            f"depth {item.node.depth}, ~{item.node.tokens} tokens folded"
            + (", active" if item.node.is_active else ""),
            active=item.node.is_active,
            children=_tree_spans(item.children),
        )
        for item in items
    ]


def _payload_json(payload: Any) -> str:
    text = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= PAYLOAD_CHARS else text[:PAYLOAD_CHARS] + "\n… (cut)"


@login_required
def session_detail(request: HtmxHttpRequest, slug: str, session_id: int) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    try:
        session = dash_selectors.session_get(workspace=workspace, session_id=session_id)
    except MemflowError:
        raise Http404("No such session.") from None
    form = SessionEventFilterForm(
        request.GET or None, kinds=session_log.session_event_kinds(session=session)
    )
    form.is_valid()  # a bad value is named beside its field; the others still apply
    data: dict[str, Any] = getattr(form, "cleaned_data", {})
    filters = session_log.EventFilters(
        kind=data.get("kind") or "", turn=data.get("turn"), memory=data.get("memory")
    )
    events = session_log.session_events(session=session, filters=filters)
    page = page_of(request, events, EVENTS_PER_PAGE)
    log = session_log.session_log(
        session=session, events=page.object_list, viewer=request.user, ledger_rows=LEDGER_ROWS
    )
    for view in log.events:
        if view["payload"] is not None:
            view["json"] = _payload_json(view["payload"])
    projections = flowctx_selectors.session_projections(session=session)
    tree = dash_selectors.summary_tree(session=session)
    refs = [  # each original beside what the model was offered in its place
        {"ref": ref, "projection": projections.get(ref.sha256)}
        for ref in dash_selectors.session_compression_refs(session=session)
    ]
    context = {
        "workspace": workspace,
        "membership": membership,
        "session": session,
        "form": form,
        "filters": filters,
        "page": page,
        "events": log.events,
        "ledger_rows": log.ledger,
        "ledger_ids": log.ledger_ids,
        "ledger_unlisted": log.ledger_ids - len(log.ledger),
        "refs": refs,
        "tree": tree,
        "tree_chart": charts.tree_chart(_tree_spans(tree)),
        "scratchpad": flowctx_selectors.scratchpad_get(session=session),
        "now": timezone.now(),
    }
    if request.htmx:
        return render(request, "contexts/session_detail.html#event-log", context)
    return render(request, "contexts/session_detail.html", context)
