"""Dashboard pages of the `contexts` app: home, overview, sessions, declarations,
settings, keys."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from contexts.dashboard import selectors as dash_selectors
from contexts.dashboard.common import (
    HtmxHttpRequest,
    not_allowed,
    page_of,
    workspace_for_page,
)
from contexts.dashboard.forms import (
    ActivityFilterForm,
    ApiKeyForm,
    AssemblyPreviewForm,
    DeclarationForm,
    DocumentForm,
    MemberForm,
    MemberRemoveForm,
    SessionFilterForm,
    WorkspaceForm,
    WorkspaceSettingsForm,
)
from contexts.errors import Invalid, MemflowError
from contexts.flowctx import selectors as flowctx_selectors
from contexts.flowctx import services as flowctx_services
from contexts.flowctx.originals import original_response
from contexts.models import Membership, Workspace
from contexts.tenancy import knobs, quotas, selectors, services
from contexts.tenancy.audit import Actor, Origin, audit_actions, audit_list, audit_withhold
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access


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


# --- sessions -------------------------------------------------------------------------------

SESSIONS_PER_PAGE = 50


@login_required
def session_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    form = SessionFilterForm(request.GET or None)
    form.is_valid()  # a bad value drops out of cleaned_data; the rest still apply
    data: dict[str, Any] = getattr(form, "cleaned_data", {})
    sessions = dash_selectors.session_list_annotated(
        workspace=workspace,
        contains=(data.get("q") or "").strip(),
        app=data.get("app") or "",
        state=data.get("state") or "",
    )
    context = {
        "workspace": workspace,
        "membership": membership,
        "form": form,
        "filtered": any(data.values()),
        "apps": dash_selectors.session_apps(workspace=workspace),
        "page": page_of(request, sessions, SESSIONS_PER_PAGE),
    }
    if request.htmx:
        return render(request, "contexts/session_list.html#session-table", context)
    return render(request, "contexts/session_list.html", context)


@login_required
def compression_detail(request: HtmxHttpRequest, slug: str, sha256: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    try:
        ref = dash_selectors.compression_ref_get(workspace=workspace, sha256=sha256)
    except MemflowError:
        raise Http404("No such original.") from None
    ref = flowctx_services.compression_masked_legacy(ref=ref)  # never shown unscanned
    if request.GET.get("download"):
        return original_response(ref)  # a download, never a page
    context = {
        "workspace": workspace,
        "membership": membership,
        "ref": ref,
        "original": dash_selectors.compression_original_view(ref=ref),
        "projection": flowctx_selectors.compression_projection(ref=ref),
    }
    if request.htmx:
        return render(request, "contexts/compression_detail.html#original", context)
    return render(request, "contexts/compression_detail.html", context)


# --- declarations and documents -----------------------------------------------------------

DECLARATIONS_PER_PAGE = 50
DOCUMENTS_PER_PAGE = 50


def _source_lines(text: str, error_line: int | None) -> list[dict[str, Any]]:
    return [
        {"number": n, "text": line, "at_fault": n == error_line}
        for n, line in enumerate(text.splitlines() or [""], start=1)
    ]


_ERROR_FIELDS = {
    "invalid_declaration": ("source_text",),
    "invalid_text": ("source_text", "content"),
    "invalid_path": ("directory", "path"),
    "document_too_large": ("content",),
    "declaration_path": ("path",),
}


def _declaration_error(form: forms.Form, exc: MemflowError) -> int | None:
    """Put a service's refusal on the form's field; the line at fault, when it names one."""
    line = exc.extra.get("line") if exc.code == "invalid_declaration" else None
    field = next((f for f in _ERROR_FIELDS.get(exc.code, ()) if f in form.fields), None)
    if isinstance(line, int):
        # "<path>:<line>: message": the page shows the line itself, so just the message.
        form.add_error(field, exc.detail.split(f":{line}: ", 1)[-1])
        return line
    form.add_error(field, exc.detail)
    return None


@login_required
def declaration_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    declaration_form = DeclarationForm(prefix="new")
    document_form = DocumentForm(prefix="doc")
    error_line = None
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.WRITE)
        if request.POST.get("kind") == "document":
            document_form = DocumentForm(request.POST, prefix="doc")
            if document_form.is_valid():
                try:
                    services.context_documents_store(
                        workspace=workspace,
                        documents=[
                            (
                                document_form.cleaned_data["path"],
                                document_form.cleaned_data["content"],
                            )
                        ],
                    )
                except MemflowError as exc:
                    _declaration_error(document_form, exc)
                else:
                    messages.success(request, f"Stored {document_form.cleaned_data['path']}.")
                    return redirect("declaration-list", slug=workspace.slug)
        else:
            declaration_form = DeclarationForm(request.POST, prefix="new")
            if declaration_form.is_valid():
                try:
                    declaration, created = services.declaration_store(
                        workspace=workspace,
                        directory=declaration_form.cleaned_data["directory"],
                        source_text=declaration_form.cleaned_data["source_text"],
                    )
                except MemflowError as exc:
                    error_line = _declaration_error(declaration_form, exc)
                else:
                    verb = "Stored" if created else "Replaced"
                    messages.success(request, f"{verb} the declaration of {declaration.directory}.")
                    return redirect(
                        "declaration-detail", slug=workspace.slug, declaration_id=declaration.pk
                    )
    preview_form = AssemblyPreviewForm(request.GET if "directory" in request.GET else None)
    preview = None
    if preview_form.is_bound and preview_form.is_valid():
        try:
            preview = dash_selectors.context_assembly_preview(
                workspace=workspace,
                directory=preview_form.cleaned_data["directory"],
                device=preview_form.cleaned_data["device"],
                hostname=preview_form.cleaned_data["hostname"],
                env=preview_form.cleaned_data["env"],
            )
        except MemflowError as exc:
            preview_form.add_error(None, exc.detail)
    context = {
        "workspace": workspace,
        "membership": membership,
        "declarations": page_of(
            request, selectors.declaration_list(workspace=workspace), DECLARATIONS_PER_PAGE
        ),
        "documents": Paginator(
            dash_selectors.context_document_sizes(workspace=workspace), DOCUMENTS_PER_PAGE
        ).get_page(request.GET.get("docs") or 1),
        "declaration_form": declaration_form,
        "document_form": document_form,
        "error_line": error_line,
        "source_lines": _source_lines(declaration_form["source_text"].value() or "", error_line)
        if error_line
        else None,
        "preview_form": preview_form,
        "preview": preview,
    }
    if request.htmx and request.method == "GET":
        return render(request, "contexts/declaration_list.html#assembly-preview", context)
    status = 400 if request.method == "POST" else 200
    return render(request, "contexts/declaration_list.html", context, status=status)


@login_required
def declaration_detail(request: HtmxHttpRequest, slug: str, declaration_id: int) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    try:
        declaration = selectors.declaration_get(workspace=workspace, declaration_id=declaration_id)
    except MemflowError:
        raise Http404("No such declaration.") from None
    form = DeclarationForm(
        initial={"directory": declaration.directory, "source_text": declaration.source_text}
    )
    error_line = None
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.WRITE)
        if request.POST.get("action") == "delete":
            services.declaration_delete(workspace=workspace, declaration_id=declaration.pk)
            messages.success(request, f"Deleted the declaration of {declaration.directory}.")
            return redirect("declaration-list", slug=workspace.slug)
        data = request.POST.copy()
        data["directory"] = declaration.directory  # editing never moves a declaration
        form = DeclarationForm(data)
        if form.is_valid():
            try:
                services.declaration_store(
                    workspace=workspace,
                    directory=declaration.directory,
                    source_text=form.cleaned_data["source_text"],
                )
            except MemflowError as exc:
                error_line = _declaration_error(form, exc)
            else:
                messages.success(request, "Saved; the next assembly reads the new text.")
                return redirect(
                    "declaration-detail", slug=workspace.slug, declaration_id=declaration.pk
                )
    shown = form["source_text"].value() if error_line else declaration.source_text
    context = {
        "workspace": workspace,
        "membership": membership,
        "declaration": declaration,
        "form": form,
        "error_line": error_line,
        "source_lines": _source_lines(shown or "", error_line),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "contexts/declaration_detail.html", context, status=status)


@login_required
def document_detail(request: HtmxHttpRequest, slug: str, document_id: int) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    try:
        document = selectors.context_document_get(workspace=workspace, document_id=document_id)
    except MemflowError:
        raise Http404("No such document.") from None
    form = DocumentForm(initial={"path": document.path, "content": document.content})
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.WRITE)
        if request.POST.get("action") == "delete":
            services.context_document_delete(workspace=workspace, document_id=document.pk)
            messages.success(request, f"Deleted {document.path}.")
            return redirect("declaration-list", slug=workspace.slug)
        data = request.POST.copy()
        data["path"] = document.path
        form = DocumentForm(data)
        if form.is_valid():
            try:
                services.context_documents_store(
                    workspace=workspace, documents=[(document.path, form.cleaned_data["content"])]
                )
            except MemflowError as exc:
                _declaration_error(form, exc)
            else:
                messages.success(request, f"Saved {document.path}.")
                return redirect("document-detail", slug=workspace.slug, document_id=document.pk)
    context = {
        "workspace": workspace,
        "membership": membership,
        "document": document,
        "form": form,
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "contexts/document_detail.html", context, status=status)


# --- settings -------------------------------------------------------------------------------


def _knob_sections(workspace: Workspace, form: WorkspaceSettingsForm) -> list[dict[str, Any]]:
    """The settings page's sections: one per capability, each knob with its words and values."""
    sections = []
    for group, members in knobs.knobs_grouped():
        rows = [
            {
                "knob": k,
                "field": form[k.name] if k.editable else None,
                "in_force": k.shown(k.value_in(workspace)),
                "is_set": k.is_set_in(workspace),
                "default": k.shown(k.default),
            }
            for k in members
        ]
        if rows:
            sections.append({"group": group, "rows": rows})
    return sections


def _refused(form: WorkspaceSettingsForm) -> str:
    count = sum(1 for name in form.errors if name in form.fields)
    many = "values are" if count != 1 else "value is"
    return f"Nothing was saved: {count} {many} not usable; see the settings marked below."


def _saved(changed: list[str]) -> str:
    if not changed:
        return "Nothing changed."
    return "Saved: " + ", ".join(knobs.knob_spec(name).label for name in changed) + "."


@login_required
def workspace_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD", "POST"):
        return refused
    registered = knobs.registered_knobs()
    settings_form = WorkspaceSettingsForm(
        knobs=registered,
        initial=WorkspaceSettingsForm.initial_for(registered, workspace.settings),
    )
    member_form = MemberForm()
    status = 200
    if request.method == "POST":
        workspace, membership = workspace_for_page(request, slug, Access.ADMIN)
        action = request.POST.get("action")
        try:
            if action == "settings":
                settings_form = WorkspaceSettingsForm(request.POST, knobs=registered)
                if not settings_form.is_valid():
                    raise Invalid(_refused(settings_form))
                changed = knobs.workspace_settings_update(
                    workspace=workspace, values=settings_form.values(), actor=_actor(request)
                )
                messages.success(
                    request,
                    _saved(changed),
                )
                return redirect("workspace-settings", slug=workspace.slug)
            if action == "member-set":
                member_form = MemberForm(request.POST)
                if not member_form.is_valid():
                    raise Invalid("Give a username and a role.")
                member = services.membership_set(
                    workspace=workspace,
                    username=member_form.cleaned_data["username"],
                    role=member_form.cleaned_data["role"],
                    actor=_actor(request),
                )
                messages.success(request, f"{member.user.username} is now {member.role}.")
                return redirect("workspace-settings", slug=workspace.slug)
            if action == "member-remove":
                remove = MemberRemoveForm(request.POST)
                if not remove.is_valid():
                    raise Invalid("Say whom to remove.")
                services.membership_remove(
                    workspace=workspace,
                    username=remove.cleaned_data["username"],
                    actor=_actor(request),
                )
                messages.success(request, f"{remove.cleaned_data['username']} was removed.")
                if remove.cleaned_data["username"].lower() == request.user.get_username().lower():
                    return redirect("home")
                return redirect("workspace-settings", slug=workspace.slug)
            raise Http404("No such action.")
        except MemflowError as exc:
            messages.error(request, exc.detail)
            status = 400
    context = {
        "workspace": workspace,
        "membership": membership,
        "sections": _knob_sections(workspace, settings_form),
        "settings_form": settings_form,
        "member_form": member_form,
        "roles": Membership.Role.choices,
        "members": selectors.membership_list(workspace=workspace),
        "quotas": quotas.quota_report(workspace=workspace, seen_by=request.user.pk),
        "context_options": json.dumps(
            (workspace.settings or {}).get(selectors.CONTEXT_SETTINGS_KEY) or {}, indent=2
        ),
    }
    return render(request, "contexts/workspace_settings.html", context, status=status)


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
                actor=_actor(request),
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
        key = services.apikey_revoke(
            user=request_user(request), key_id=key_id, actor=_actor(request)
        )
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


def _actor(request: HtmxHttpRequest) -> Actor:
    return Actor.for_request(request, origin=Origin.DASHBOARD)


ACTIVITY_PER_PAGE = 50


@login_required
def activity_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The workspace's audit trail: who changed what, when and from where."""
    workspace, membership = workspace_for_page(request, slug)
    if refused := not_allowed(request, "GET", "HEAD"):
        return refused
    actions = audit_actions(workspace=workspace)
    members = [m.user.username for m in selectors.membership_list(workspace=workspace)]
    form = ActivityFilterForm(request.GET or None, actions=actions, members=members)
    form.is_valid()  # a bad value drops out of cleaned_data; the rest still apply
    data: dict[str, Any] = getattr(form, "cleaned_data", {})
    rows = audit_list(
        workspace=workspace,
        username=data.get("user") or None,
        action=data.get("action") or None,
        origin=data.get("origin") or None,
    )
    page = page_of(request, rows, ACTIVITY_PER_PAGE)
    # Texts of entries private to someone else stay out of the trail shown here.
    page.object_list = audit_withhold(page.object_list, workspace=workspace, viewer=request.user)
    context = {
        "workspace": workspace,
        "membership": membership,
        "form": form,
        "filtered": any(data.values()),
        "page": page,
    }
    if request.htmx:
        return render(request, "contexts/activity_list.html#activity-table", context)
    return render(request, "contexts/activity_list.html", context)
