"""The dashboard's queue: conflict clusters and fading entries, each settled in one form."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.utils import timezone

from contexts.dashboard.common import HtmxHttpRequest, not_allowed, workspace_for_page
from contexts.errors import MemflowError
from contexts.models import Membership, Workspace
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.selectors import Access
from memories import selectors, services
from memories.dashboard.forms import ConflictResolveForm, FadingResolveForm

QUEUE_SIZE = 20


@login_required
def triage_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """What waits for a decision: conflict clusters, then fading entries."""
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    return _queue(request, workspace, membership)


def _queue(
    request: HtmxHttpRequest,
    workspace: Workspace,
    membership: Membership,
    *,
    typed: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The queue page; `typed`: a refused conflict form's values, shown back in its cluster."""
    now = timezone.now()
    context = {
        "workspace": workspace,
        "membership": membership,
        "clusters": selectors.memory_conflict_clusters(
            workspace=workspace, limit=QUEUE_SIZE, viewer_id=request.user.pk
        ),
        "fading": selectors.memory_fading(
            workspace=workspace, limit=QUEUE_SIZE, now=now, viewer_id=request.user.pk
        ),
        "typed": typed or {},
    }
    return render(request, "memories/triage_list.html", context, status=status)


@login_required
def triage_action(request: HtmxHttpRequest, slug: str, kind: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug, Access.WRITE)
    if request.method != "POST":  # checked after access, so outsiders see 404, not 405
        return HttpResponseNotAllowed(["POST"])
    actor = Actor.for_request(request, origin=Origin.DASHBOARD)
    form = ConflictResolveForm(request.POST)
    try:
        if kind == "conflict":
            if not form.is_valid():
                raise services.Invalid("Choose what to do with these memories.", code="invalid")
            data = form.cleaned_data
            held = services.memory_conflict_resolve(
                workspace=workspace,
                ids=form.ids(),
                decision=data["decision"],
                conclusion=data["conclusion"],
                keep=data["keep"],
                actor=actor,
            )
            done = dict(form.fields["decision"].choices)[data["decision"]]  # type: ignore[attr-defined]
            held_note = f"; #{held.pk} holds" if held is not None else ""
            messages.success(
                request, f"{done}: {', '.join(f'#{i}' for i in form.ids())}{held_note}."
            )
        elif kind == "fading":
            fading = FadingResolveForm(request.POST)
            if not fading.is_valid():
                raise services.Invalid("Choose keep, let fade or forget.", code="invalid")
            memory = selectors.memory_get(
                workspace=workspace,
                memory_id=fading.cleaned_data["id"],
                viewer_id=request.user.pk,
            )
            services.memory_fading_resolve(
                workspace=workspace,
                memory=memory,
                decision=fading.cleaned_data["decision"],
                actor=actor,
            )
            messages.success(request, f"Memory #{memory.pk}: settled.")
        else:
            raise Http404("No such queue.")
    except MemflowError as exc:
        messages.error(request, exc.detail)
        if kind == "conflict":  # shown again as typed, in its cluster, rather than lost
            typed = {
                "cluster": "-".join(str(i) for i in sorted(set(form.ids()))),
                "decision": form.data.get("decision", ""),
                "conclusion": form.data.get("conclusion", ""),
                "keep": form.data.get("keep", ""),
            }
            return _queue(request, workspace, membership, typed=typed, status=400)
    return redirect("triage-list", slug=workspace.slug)
