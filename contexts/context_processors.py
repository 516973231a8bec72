from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from contexts.selectors import membership_list_for_user


def workspaces(request: HttpRequest) -> dict[str, Any]:
    """The workspace switcher's entries and the workspace the page is about."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    memberships = list(membership_list_for_user(user=user))
    match = request.resolver_match
    slug = match.kwargs.get("slug") if match else None
    current = next((m for m in memberships if slug and m.workspace.slug == slug.lower()), None)
    return {"my_memberships": memberships, "current_membership": current}
