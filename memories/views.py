"""Dashboard pages of the `memories` app: memories, one memory, core memory."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.utils import timezone

from contexts.auth import request_user
from contexts.dashboard import HtmxHttpRequest, workspace_for_page
from contexts.errors import MemflowError
from contexts.selectors import Access
from memories import core, rendering, selectors, services
from memories.conf import memory_setting
from memories.decay import retention
from memories.forms import (
    CoreEditForm,
    CoreMoveForm,
    MemoryEditForm,
    MemorySearchForm,
    SupersedeForm,
)
from memories.models import CoreMemory, DedupeEvent, Memory

PAGE_SIZE = 50


@login_required
def memory_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    form = MemorySearchForm(request.GET or None)
    data: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    status = data.get("status") or "current"
    filters = selectors.MemoryFilters(
        compartment=data.get("compartment") or None,
        source=data.get("source") or None,
        app=data.get("app") or None,
        include_superseded=status != "current",
    )
    query = (data.get("q") or "").strip()
    rows: list[tuple[Memory, float | None]]
    page = None
    if query:
        # The same recall the API uses, with its fused score.
        hits = selectors.memory_recall(
            workspace=workspace, query=query, k=PAGE_SIZE, filters=filters
        ).hits
        rows = [(h.memory, h.score) for h in hits if status != "superseded" or h.memory.valid_to]
    else:
        qs = selectors.memory_list(workspace=workspace, filters=filters)
        if status == "superseded":
            qs = qs.filter(valid_to__isnull=False)
        page = Paginator(qs.defer("embedding", "lex"), PAGE_SIZE).get_page(data.get("page") or 1)
        rows = [(m, None) for m in page.object_list]
    now = timezone.now()
    context = {
        "workspace": workspace,
        "membership": membership,
        "form": form,
        "query": query,
        "rows": [(m, score, rendering.age_label(m.created_at, now)) for m, score in rows],
        "page": page,
        "status": status,
    }
    if request.htmx:
        return render(request, "memories/memory_list.html#memory-table", context)
    return render(request, "memories/memory_list.html", context)


def _decay_curve(memory: Memory, tau: float) -> str:
    """SVG points of retention over the next 365 days, if nothing touches it."""
    now = timezone.now()
    points = []
    for day in range(0, 366, 5):
        r = retention(
            last_accessed=memory.last_accessed,
            access_count=memory.access_count,
            source=memory.source,
            now=now + timedelta(days=day),
            base_tau_days=tau,
        )
        points.append(f"{day * 300 / 365:.1f},{(1 - r) * 100:.1f}")
    return " ".join(points)


def _chain(memory: Memory) -> list[Memory]:
    """The supersede chain through this memory, oldest first."""
    older: list[Memory] = []
    current: Memory | None = memory
    seen = {memory.pk}
    while True:
        previous = (
            Memory.objects.filter(superseded_by=current).order_by("-valid_to").first()
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


@login_required
def memory_detail(request: HtmxHttpRequest, slug: str, memory_id: int) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    try:
        memory = selectors.memory_get(workspace=workspace, memory_id=memory_id)
    except MemflowError:
        from django.http import Http404

        raise Http404("No such memory.") from None
    tau = float(memory_setting(workspace, "decay_tau_days"))
    now = timezone.now()
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
        "curve": _decay_curve(memory, tau),
        "chain": _chain(memory),
        "evidence": Memory.objects.filter(conclusion_links__conclusion=memory),
        "conclusions": Memory.objects.filter(evidence_links__evidence=memory),
        "folds": DedupeEvent.objects.filter(memory=memory).order_by("-created_at")[:20],
        "edit_form": MemoryEditForm(
            initial={"text": memory.text, "compartment": memory.compartment}
        ),
        "supersede_form": SupersedeForm(),
    }
    return render(request, "memories/memory_detail.html", context)


@login_required
def memory_action(request: HtmxHttpRequest, slug: str, memory_id: int, action: str) -> HttpResponse:
    workspace, _ = workspace_for_page(request, slug, Access.WRITE)
    if request.method != "POST":  # checked after access, so outsiders see 404, not 405
        return HttpResponseNotAllowed(["POST"])
    memory = Memory.objects.filter(workspace=workspace, pk=memory_id).first()
    if memory is None:
        from django.http import Http404

        raise Http404("No such memory.")
    user = request_user(request)
    try:
        if action == "edit":
            form = MemoryEditForm(request.POST)
            if not form.is_valid():
                raise services.Invalid("The text is required.", code="invalid")
            services.memory_update(
                workspace=workspace,
                memory=memory,
                text=form.cleaned_data["text"],
                compartment=form.cleaned_data["compartment"],
            )
            messages.success(request, "Saved; the memory was re-embedded.")
        elif action == "supersede":
            replacement = SupersedeForm(request.POST)
            if not replacement.is_valid():
                raise services.Invalid("Say what replaces it.", code="invalid")
            successor = services.memory_supersede(
                workspace=workspace, memory=memory, text=replacement.cleaned_data["text"], user=user
            )
            messages.success(request, f"Superseded by #{successor.pk}.")
            return redirect("memory-detail", slug=workspace.slug, memory_id=successor.pk)
        elif action == "pin":
            services.memory_pin(memory=memory, pinned=not memory.pinned)
            messages.success(
                request, "Pinned: cleanup never removes it." if not memory.pinned else "Unpinned."
            )
        elif action == "forget":
            services.memory_forget(workspace=workspace, memory=memory)
            messages.success(request, f"Memory #{memory_id} forgotten.")
            return redirect("memory-list", slug=workspace.slug)
        else:
            from django.http import Http404

            raise Http404("No such action.")
    except MemflowError as exc:
        messages.error(request, exc.detail)
    return redirect("memory-detail", slug=workspace.slug, memory_id=memory_id)


@login_required
def core_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    user = request_user(request)
    context = _core_context(workspace, membership, user)
    return render(request, "memories/core_detail.html", context)


def _core_context(workspace: Any, membership: Any, user: Any, **extra: Any) -> dict[str, Any]:
    documents = []
    for scope in (CoreMemory.Scope.USER, CoreMemory.Scope.WORKSPACE):
        owner = user if scope == CoreMemory.Scope.USER else None
        documents.append(
            {
                "scope": scope,
                "label": core.LABELS[scope],
                "view": core.core_view(scope=scope, user=owner, workspace=workspace),
                "revisions": core.core_revisions(scope=scope, workspace=workspace, user=owner)[:20],
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
    scope = core.scope_for(target)
    owner = user if scope == CoreMemory.Scope.USER else None
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
            )
            messages.success(
                request, f"Moved to the archive as memory #{memory.pk} ({memory.compartment})."
            )
        elif action == "revert":
            version = int(request.POST.get("version", "0") or 0)
            core.core_revert(scope=scope, workspace=workspace, user=owner, version=version)
            messages.success(request, f"{core.LABELS[scope]} reverted to version {version}.")
        else:
            from django.http import Http404

            raise Http404("No such action.")
    except MemflowError as exc:
        error = {"scope": scope, "detail": exc.detail, "code": exc.code, **exc.extra}
    context = _core_context(workspace, membership, user, error=error)
    return render(request, "memories/core_detail.html", context)
