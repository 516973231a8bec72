"""Server-wide reads for the administrator's CLI (`memflow users|workspaces|members|keys`).

Unlike `contexts.tenancy.selectors`, nothing here is scoped to a caller: these run on
the server, against the database, for whoever administers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from contexts.errors import NotFound
from contexts.models import ApiKey, Membership, Workspace

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def user_get(*, username: str) -> User:
    user = get_user_model().objects.filter(username__iexact=username.strip()).first()
    if user is None:
        raise NotFound(f"There is no user {username!r}.", code="user_not_found")
    return user


def workspace_get(*, slug: str) -> Workspace:
    workspace = Workspace.objects.filter(slug__iexact=slug.strip()).first()
    if workspace is None:
        raise NotFound(f"There is no workspace {slug!r}.", code="workspace_not_found")
    return workspace


def apikey_get(*, key_id: int) -> ApiKey:
    key = ApiKey.objects.select_related("user", "workspace").filter(pk=key_id).first()
    if key is None:
        raise NotFound(f"There is no key {key_id}.", code="key_not_found")
    return key


def user_list() -> QuerySet[User]:
    """Every user, with how many workspaces they belong to and how many live keys they hold."""
    return (
        get_user_model()
        .objects.annotate(
            workspace_count=Count("memberships", distinct=True),
            active_key_count=Count(
                "api_keys", filter=Q(api_keys__revoked_at__isnull=True), distinct=True
            ),
        )
        .order_by("username")
    )


def workspace_list_all() -> QuerySet[Workspace]:
    """Every workspace, with its member count and its owners' memberships (`owners`)."""
    members = (
        Membership.objects.filter(workspace=OuterRef("pk"))
        .order_by()
        .values("workspace")
        .annotate(n=Count("pk"))
        .values("n")
    )
    owners = Membership.objects.filter(role=Membership.Role.OWNER).select_related("user")
    return (
        Workspace.objects.annotate(
            member_count=Coalesce(Subquery(members, output_field=IntegerField()), Value(0)),
        )
        .prefetch_related(
            Prefetch("memberships", queryset=owners.order_by("user__username"), to_attr="owners")
        )
        .order_by("slug")
    )


def apikey_list_all(
    *,
    user: User | None = None,
    workspace: Workspace | None = None,
    include_revoked: bool = False,
) -> QuerySet[ApiKey]:
    """Keys across the server, newest first; live ones only unless `include_revoked`."""
    keys = ApiKey.objects.select_related("user", "workspace")
    if user is not None:
        keys = keys.filter(user=user)
    if workspace is not None:
        keys = keys.filter(workspace=workspace)
    if not include_revoked:
        keys = keys.filter(revoked_at__isnull=True)
    return keys.order_by("-created_at", "-id")
