"""One memory's changes from its page: one small view per action (healthchecks'
`pause` / `resume` shape), each a POST that redirects back to a page.

What they share is in `memory_action`: the access check (outsiders get a 404
before a 405), the memory looked up for the viewer (private entries of others
are not found), a forgotten memory refused for anything but restore and
purge, and a refused change said on the page instead of raised.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect

from contexts.dashboard.common import HtmxHttpRequest, workspace_for_page
from contexts.errors import MemflowError
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access
from memories import selectors, services
from memories.dashboard.forms import ForgetForm, MemoryEditForm, SupersedeForm
from memories.models import Memory

# (request, workspace, memory, actor) -> a response, or None for the memory's own page.
Action = Callable[[HtmxHttpRequest, Workspace, Memory, Actor], HttpResponse | None]
View = Callable[[HtmxHttpRequest, str, int], HttpResponse]


def memory_action(
    *, access: Access = Access.WRITE, on_forgotten: bool = False
) -> Callable[[Action], View]:
    """The view of one action: `on_forgotten` actions are the ones a tombstone takes."""

    def decorate(action: Action) -> View:
        @login_required
        @wraps(action)
        def view(request: HtmxHttpRequest, slug: str, memory_id: int) -> HttpResponse:
            workspace, _ = workspace_for_page(request, slug, access)
            if request.method != "POST":  # after access, so outsiders see 404, not 405
                return HttpResponseNotAllowed(["POST"])
            try:
                memory = selectors.memory_get(
                    workspace=workspace,
                    memory_id=memory_id,
                    forgotten=True,
                    viewer_id=request.user.pk,
                )
            except MemflowError:
                raise Http404("No such memory.") from None
            actor = Actor.for_request(request, origin=Origin.DASHBOARD)
            try:
                if memory.forgotten_at is not None and not on_forgotten:
                    raise services.Conflict(
                        "This memory is forgotten: restore it first.", code="memory_forgotten"
                    )
                if (done := action(request, workspace, memory, actor)) is not None:
                    return done
            except MemflowError as exc:
                messages.error(request, exc.detail)
            return redirect("memory-detail", slug=workspace.slug, memory_id=memory_id)

        return view

    return decorate


@memory_action()
def memory_edit(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    form = MemoryEditForm(request.POST)
    if not form.is_valid():
        raise services.Invalid("The text is required.", code="invalid")
    services.memory_update(
        workspace=workspace,
        memory=memory,
        text=form.cleaned_data["text"],
        compartment=form.cleaned_data["compartment"],
        actor=actor,
    )
    messages.success(request, "Saved; the memory was re-embedded.")
    return None


@memory_action()
def memory_supersede(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    replacement = SupersedeForm(request.POST)
    if not replacement.is_valid():
        raise services.Invalid("Say what replaces it.", code="invalid")
    successor = services.memory_supersede(
        workspace=workspace,
        memory=memory,
        text=replacement.cleaned_data["text"],
        user=request_user(request),
        actor=actor,
    )
    messages.success(request, f"Superseded by #{successor.pk}.")
    return redirect("memory-detail", slug=workspace.slug, memory_id=successor.pk)


@memory_action()
def memory_pin(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    services.memory_pin(memory=memory, pinned=not memory.pinned)
    messages.success(request, "Pinned: cleanup never removes it." if memory.pinned else "Unpinned.")
    return None


@memory_action()
def memory_private(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    services.memory_set_private(
        workspace=workspace, memory=memory, private=not memory.private, actor=actor
    )
    messages.success(
        request, "Private: only you see it." if memory.private else "Shared with the workspace."
    )
    return None


@memory_action()
def memory_forget(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    reason = ForgetForm(request.POST)
    reason.is_valid()
    services.memory_forget(
        workspace=workspace,
        memory=memory,
        actor=actor,
        reason=reason.cleaned_data.get("reason", ""),
    )
    messages.success(request, f"Memory #{memory.pk} forgotten; it can be restored below.")
    return None


@memory_action(on_forgotten=True)
def memory_restore(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    services.memory_restore(workspace=workspace, memory=memory, actor=actor)
    messages.success(request, f"Memory #{memory.pk} restored.")
    return None


@memory_action(access=Access.ADMIN, on_forgotten=True)
def memory_purge(
    request: HtmxHttpRequest, workspace: Workspace, memory: Memory, actor: Actor
) -> HttpResponse | None:
    memory_id = memory.pk
    services.memory_purge(workspace=workspace, memory=memory, actor=actor)
    messages.success(request, f"Memory #{memory_id} purged: its text is gone for good.")
    return redirect("memory-list", slug=workspace.slug)


ACTIONS = {
    "edit": memory_edit,
    "supersede": memory_supersede,
    "pin": memory_pin,
    "private": memory_private,
    "forget": memory_forget,
    "restore": memory_restore,
    "purge": memory_purge,
}
