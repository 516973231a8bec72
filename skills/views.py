"""Dashboard pages of the `skills` app."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from contexts.dashboard import HtmxHttpRequest, workspace_for_page


@login_required
def skill_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    return render(
        request, "skills/skill_list.html", {"workspace": workspace, "membership": membership}
    )
