"""Dashboard pages of the `skills` app: the catalogue, each skill's versions
and the reasons the evolution gave for every change."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import redirect, render

from contexts.auth import request_user
from contexts.dashboard import HtmxHttpRequest, not_allowed, page_of, workspace_for_page
from contexts.errors import MemflowError
from contexts.selectors import Access
from skills import selectors, services
from skills.models import Skill, SkillVersion

SKILLS_PER_PAGE = 50
STATUSES = ("available", "active", "stale", "archived", "all")
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
    page = page_of(request, skills, SKILLS_PER_PAGE)
    events = list(selectors.skill_events(workspace=workspace, user=user)[:30])
    context = {
        "workspace": workspace,
        "membership": membership,
        "page": page,
        "status": status,
        "statuses": STATUSES,
        "events": events,
    }
    if request.htmx:
        return render(request, "skills/skill_list.html#skill-table", context)
    return render(request, "skills/skill_list.html", context)


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
