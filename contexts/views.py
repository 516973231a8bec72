"""Dashboard pages of the `contexts` app: home, workspaces, sessions, keys."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from contexts import selectors, services
from contexts.auth import request_user
from contexts.dashboard import HtmxHttpRequest, workspace_for_page
from contexts.errors import MemflowError
from contexts.forms import ApiKeyForm, WorkspaceForm
from contexts.selectors import Access


@login_required
def home(request: HtmxHttpRequest) -> HttpResponse:
    first = selectors.membership_list_for_user(user=request.user).first()
    if first is None:
        return redirect("workspace-create")
    return redirect("workspace-overview", slug=first.workspace.slug)


@login_required
@require_http_methods(["GET", "POST"])
def workspace_create(request: HtmxHttpRequest) -> HttpResponse:
    form = WorkspaceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            workspace = services.workspace_create(
                user=request_user(request),
                slug=form.cleaned_data["slug"],
                name=form.cleaned_data["name"],
            )
        except MemflowError as exc:
            form.add_error("slug", exc.detail)
        else:
            messages.success(request, f"Workspace {workspace.slug} created.")
            return redirect("workspace-overview", slug=workspace.slug)
    return render(request, "contexts/workspace_form.html", {"form": form})


@login_required
def workspace_overview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    sessions = selectors.agent_session_list(workspace=workspace)[:10]
    return render(
        request,
        "contexts/workspace_overview.html",
        {"workspace": workspace, "membership": membership, "recent_sessions": sessions},
    )


@login_required
def session_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    sessions = selectors.agent_session_list(workspace=workspace)[:100]
    return render(
        request,
        "contexts/session_list.html",
        {"workspace": workspace, "membership": membership, "sessions": sessions},
    )


@login_required
def declaration_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    return render(
        request,
        "contexts/declaration_list.html",
        {"workspace": workspace, "membership": membership},
    )


@login_required
def workspace_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    return render(
        request,
        "contexts/workspace_settings.html",
        {
            "workspace": workspace,
            "membership": membership,
            "members": selectors.membership_list(workspace=workspace),
        },
    )


def _key_form(request: HtmxHttpRequest, data: object = None) -> ApiKeyForm:
    choices = [
        (m.workspace.slug, m.workspace.name)
        for m in selectors.membership_list_for_user(user=request.user)
    ]
    return ApiKeyForm(data, workspace_choices=choices)


@login_required
@require_http_methods(["GET", "POST"])
def apikey_list(request: HtmxHttpRequest) -> HttpResponse:
    form = _key_form(request, request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            workspace = None
            if form.cleaned_data["workspace"]:
                workspace, _ = workspace_for_page(
                    request, form.cleaned_data["workspace"], Access.READ
                )
            created = services.apikey_create(
                user=request_user(request),
                name=form.cleaned_data["name"],
                scope=form.cleaned_data["scope"],
                workspace=workspace,
            )
        except MemflowError as exc:
            form.add_error(None, exc.detail)
        else:
            form = _key_form(request)
    context = {"form": form, "created": created, "keys": selectors.apikey_list(user=request.user)}
    if request.htmx:
        return render(request, "contexts/apikey_list.html#key-panel", context)
    return render(request, "contexts/apikey_list.html", context)


@login_required
@require_POST
def apikey_revoke(request: HtmxHttpRequest, key_id: int) -> HttpResponse:
    try:
        key = services.apikey_revoke(user=request_user(request), key_id=key_id)
    except MemflowError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Key {key.prefix}… revoked; it stops working now.")
    context = {
        "form": _key_form(request),
        "created": None,
        "keys": selectors.apikey_list(user=request.user),
    }
    if request.htmx:
        return render(request, "contexts/apikey_list.html#key-panel", context)
    return redirect("apikey-list")
