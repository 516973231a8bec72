"""Dashboard pages of flowctx: the workspace's stored originals."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Sum
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from contexts.dashboard.common import HtmxHttpRequest, not_allowed, page_of, workspace_for_page
from contexts.flowctx import selectors

ORIGINALS_PER_PAGE = 50


@login_required
def compression_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Every stored original of the workspace; each opens as escaped text or downloads."""
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    refs = selectors.compression_list(workspace=workspace)
    context = {
        "workspace": workspace,
        "membership": membership,
        "page": page_of(request, refs, ORIGINALS_PER_PAGE),
        "total_bytes": refs.aggregate(total=Sum("size"))["total"] or 0,
        "now": timezone.now(),
    }
    if request.htmx:
        return render(request, "contexts/compression_list.html#original-table", context)
    return render(request, "contexts/compression_list.html", context)
