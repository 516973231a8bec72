from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from contexts.tenancy.selectors import membership_list_for_user


def workspaces(request: HttpRequest) -> dict[str, Any]:
    """The workspace switcher's entries and the workspace the page is about."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    memberships = list(membership_list_for_user(user=user))
    match = request.resolver_match
    slug = match.kwargs.get("slug") if match else None
    current = next((m for m in memberships if slug and m.workspace.slug == slug.lower()), None)
    # Switching keeps the page: the same named route in the other workspace when the route
    # names nothing but the workspace (a list, a settings page); a page about one object
    # (memory #12) goes to the overview, so no object of another workspace is ever probed.
    same_page = match.view_name if match and set(match.kwargs) == {"slug"} else None
    switches = [(m, _switch_url(same_page, m.workspace.slug)) for m in memberships]
    return {"my_memberships": memberships, "current_membership": current, "switches": switches}


def _switch_url(view_name: str | None, slug: str) -> str:
    if view_name:
        try:
            return reverse(view_name, kwargs={"slug": slug})
        except NoReverseMatch:
            pass
    return reverse("workspace-overview", kwargs={"slug": slug})
