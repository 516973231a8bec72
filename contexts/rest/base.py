"""What every workspace-scoped REST view shares.

Access is decided in `initial()`, before DRF picks the handler for the
method, so a request for someone else's workspace answers 404 whatever the
method or path below it: existence is never leaked, not even by a 405.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts.errors import Invalid, NotFound
from contexts.models import AgentSession, ApiKey, Membership, Workspace
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access, agent_session_own, key_allows, workspace_access
from contexts.tenancy.services import agent_session_get_or_create

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

    def can_write(self, request: Request) -> bool:
        """Whether this caller may write here: an editor or owner, with a key that allows it."""
        return self.membership.can_write and key_allows(request_key(request), Access.WRITE)

    def own_session(
        self, request: Request, external_id: str | None, *, app: str = ""
    ) -> AgentSession | None:
        """The caller's session `external_id`, to tie this request to (None: no id given).

        Created on first sight for a caller who may write here; a read key or
        a viewer creates nothing, and one of theirs that does not exist ties
        nothing. Another user's session of that id: 403
        `session_belongs_to_another_user`, whoever asks.
        """
        if not external_id:
            return None
        user = request_user(request)
        if self.can_write(request):
            return agent_session_get_or_create(
                workspace=self.workspace, external_id=external_id, user=user, app=app
            )
        try:
            return agent_session_own(workspace=self.workspace, external_id=external_id, user=user)
        except NotFound:
            return None


# --- pagination --------------------------------------------------------------------------------

# Every list answers {count, offset, limit, results}; `limit` past its bound is refused
# (400 `limit_too_large`) rather than silently cut, so a client never mistakes a short page
# for the end.
MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True)
class Page:
    limit: int
    offset: int


def _query_int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise Invalid(f"`{name}` must be a whole number.", code="invalid_page") from None


def page_params(request: Request, *, default: int = 50, maximum: int = 200) -> Page:
    """`?limit=` and `?offset=` of a list request, checked against the list's bound."""
    limit = _query_int(request, "limit", default)
    offset = _query_int(request, "offset", 0)
    if limit > maximum:
        raise Invalid(
            f"`limit` is at most {maximum} here; page with `offset`.",
            code="limit_too_large",
            extra={"maximum": maximum},
        )
    if limit < 1 or not 0 <= offset <= MAX_OFFSET:
        raise Invalid("`limit` must be 1 or more and `offset` 0 or more.", code="invalid_page")
    return Page(limit=limit, offset=offset)


def page_response(
    request: Request,
    items: QuerySet[Any] | Sequence[Any],
    *,
    render: Callable[[list[Any]], Any],
    default: int = 50,
    maximum: int = 200,
) -> Response:
    """One page of `items` (a queryset is counted and sliced in SQL), rendered by `render`."""
    page = page_params(request, default=default, maximum=maximum)
    count = items.count() if isinstance(items, QuerySet) else len(items)
    rows = list(items[page.offset : page.offset + page.limit])
    return Response(
        {"count": count, "offset": page.offset, "limit": page.limit, "results": render(rows)}
    )


def page_schema(name: str, item: Any) -> type[serializers.Serializer]:
    """The OpenAPI shape of a page of `item` rows (for `extend_schema(responses=…)`)."""
    many = item(many=True) if isinstance(item, type) else item
    fields = {
        "count": serializers.IntegerField(),
        "offset": serializers.IntegerField(),
        "limit": serializers.IntegerField(),
        "results": many,
    }
    return type(name, (serializers.Serializer,), fields)


PAGE_PARAMETERS = [
    OpenApiParameter("limit", int, description="Rows per page (bounded; past it: 400)."),
    OpenApiParameter("offset", int, description="Rows to skip."),
]
