"""Dashboard pages of the `skills` app: the catalogue, each skill's versions
and the reasons the evolution gave for every change."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from contexts.dashboard.common import (
    HtmxHttpRequest,
    line_diff,
    not_allowed,
    page_of,
    workspace_for_page,
)
from contexts.errors import MemflowError
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access
from skills import folder, selectors, services
from skills.models import Skill, SkillVersion

SKILLS_PER_PAGE = 50
STATUSES = selectors.STATUS_FILTERS
# Recent changes shown on the workspace overview (which asks this page for them).
OVERVIEW_EVENTS = 8
ACTIONS = {"archive": services.skill_archive, "restore": services.skill_restore}


@login_required
def skill_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if request.method == "POST":
        return _skill_action(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    status = request.GET.get("status") or "available"
    if status not in STATUSES:
        status = "available"
    user = request_user(request)
    skills = (
        selectors.skill_list(workspace=workspace, user=user, status=status)
        .select_related("workspace", "owner")
        .prefetch_related(Prefetch("versions", queryset=SkillVersion.objects.order_by("-version")))
    )
    if request.htmx and request.htmx.target == "skill-changes":
        # The overview's "skills changed" panel: the evolution log's latest entries.
        events = list(selectors.skill_events(workspace=workspace, user=user)[:OVERVIEW_EVENTS])
        context = {"workspace": workspace, "events": events, "compact": True}
        return render(request, "skills/skill_list.html#skill-events", context)
    page = page_of(request, skills, SKILLS_PER_PAGE)
    events = list(selectors.skill_events(workspace=workspace, user=user)[:30])
    context = {
        "workspace": workspace,
        "membership": membership,
        "page": page,
        "rows": [(skill, _versions(skill)) for skill in page.object_list],
        "status": status,
        "statuses": STATUSES,
        "events": events,
    }
    if request.htmx:
        return render(request, "skills/skill_list.html#skill-table", context)
    return render(request, "skills/skill_list.html", context)


def _versions(skill: Skill) -> list[dict[str, Any]]:
    """Each version, newest first, with the line diff of its body from the one before."""
    versions = list(skill.versions.all())  # prefetched, newest first
    return [
        {
            "version": v,
            "diff": line_diff(older.body, v.body) if older else None,
            "described": older is not None and older.description != v.description,
            "previous": older,
        }
        for v, older in zip(versions, [*versions[1:], None], strict=True)
    ]


@login_required
def skill_export(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The catalogue as a skills folder (tar.gz of `<name>/SKILL.md`), as the API exports it."""
    workspace, _ = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    status = request.GET.get("status") or "available"
    if status not in STATUSES:
        status = "available"
    files = selectors.skills_export_files(
        workspace=workspace, user=request_user(request), status=status
    )
    response = HttpResponse(folder.archive_build(files), content_type="application/gzip")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = (
        f'attachment; filename="{workspace.slug}-skills-{stamp}.tar.gz"'
    )
    return response


def _skill_action(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Archive or restore one skill: writers only, checked here, not in the template."""
    workspace, _ = workspace_for_page(request, slug, access=Access.WRITE)  # 403 for viewers
    verb = request.POST.get("action", "")
    action = ACTIONS.get(verb)
    if action is None:
        messages.error(request, "Unknown action.")
        return redirect("skill-list", slug=slug)
    user = request_user(request)
    try:
        skill: Skill = selectors.skill_get(
            workspace=workspace,
            user=user,
            name=request.POST.get("name", ""),
            scope=request.POST.get("scope") or None,
        )
        action(skill=skill, user=user, reason="from the dashboard")
    except MemflowError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"{verb.capitalize()}d {skill.name}.")
    return redirect("skill-list", slug=slug)
