"""What every workspace-scoped REST view shares.

Access is decided in `initial()`, before DRF picks the handler for the
method, so a request for someone else's workspace answers 404 whatever the
method or path below it: existence is never leaked, not even by a 405.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.request import Request
from rest_framework.views import APIView

from contexts.errors import NotFound
from contexts.models import ApiKey, Membership, Workspace
from contexts.selectors import Access, workspace_access

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def request_key(request: Request) -> ApiKey | None:
    auth = request.auth
    return auth if isinstance(auth, ApiKey) else None


class WorkspaceApiView(APIView):
    """Base for views under `/api/v1/workspaces/{slug}/`."""

    # Overrides of the access a method needs; the default is READ for safe
    # methods and WRITE for the rest.
    method_access: ClassVar[dict[str, Access]] = {}

    workspace: Workspace
    membership: Membership

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        method = request.method or "GET"
        default = Access.READ if method in SAFE_METHODS else Access.WRITE
        access = self.method_access.get(method, default)
        self.workspace, self.membership = workspace_access(
            user=request.user,
            slug=kwargs["slug"],
            access=access,
            api_key=request_key(request),
        )
        if any("\x00" in value for value in kwargs.values() if isinstance(value, str)):
            # Nothing can be named with a NUL: Postgres refuses it in text.
            raise NotFound("No such object.", code="not_found")
