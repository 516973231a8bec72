"""Helpers every dashboard view shares (all apps import these)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required  # noqa: F401  (re-exported for apps)
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django_htmx.middleware import HtmxDetails

from contexts.errors import Forbidden, NotFound
from contexts.models import Membership, Workspace
from contexts.selectors import Access, workspace_access


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def workspace_for_page(
    request: HttpRequest, slug: str, access: Access = Access.READ
) -> tuple[Workspace, Membership]:
    """The workspace for a dashboard page, checked like the API checks it."""
    try:
        return workspace_access(user=request.user, slug=slug, access=access)
    except NotFound:
        raise Http404("No such workspace.") from None
    except Forbidden as exc:
        raise PermissionDenied(exc.detail) from None
