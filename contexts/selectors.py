"""Reads in the `contexts` app, each scoped to what the caller may see."""

from __future__ import annotations

import enum
import hashlib
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.utils import timezone

from contexts.errors import Forbidden, NotFound
from contexts.models import AgentSession, ApiKey, Membership, Workspace

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    AnyUser = AbstractBaseUser | AnonymousUser

# last_used_at is informational; writing it on every request would put a
# row update on the hot path of every hook call.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


class Access(enum.IntEnum):
    """What a request wants to do in a workspace, weakest first."""

    READ = 1
    WRITE = 2
    ADMIN = 3  # manage the workspace itself: rename, delete, members


_KEY_SCOPE_ALLOWS = {
    ApiKey.Scope.READ: Access.READ,
    ApiKey.Scope.WRITE: Access.WRITE,
    ApiKey.Scope.ADMIN: Access.ADMIN,
}


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def apikey_get_active(*, raw_key: str) -> ApiKey | None:
    key = (
        ApiKey.objects.select_related("user", "workspace")
        .filter(key_hash=hash_key(raw_key), revoked_at__isnull=True)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def _user_id(user: AnyUser) -> int:
    if user.pk is None:  # AnonymousUser: views and the API authenticate first
        raise NotFound("Log in first.", code="not_authenticated")
    return int(user.pk)


def apikey_list(*, user: AnyUser) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user_id=_user_id(user)).select_related("workspace")


def key_allows(key: ApiKey | None, access: Access) -> bool:
    return key is None or _KEY_SCOPE_ALLOWS[ApiKey.Scope(key.scope)] >= access


def workspace_list_for_user(*, user: AnyUser, api_key: ApiKey | None = None) -> QuerySet[Workspace]:
    workspaces = Workspace.objects.filter(memberships__user_id=_user_id(user))
    if api_key is not None and api_key.workspace_id is not None:
        workspaces = workspaces.filter(pk=api_key.workspace_id)
    return workspaces.order_by("slug")


def membership_list_for_user(*, user: AnyUser) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(user_id=_user_id(user))
        .select_related("workspace")
        .order_by("workspace__slug")
    )


def workspace_access(
    *, user: AnyUser, slug: str, access: Access, api_key: ApiKey | None = None
) -> tuple[Workspace, Membership]:
    """The workspace `slug` with the caller's membership, or an error.

    Not a member, or a key restricted to another workspace: `NotFound`, so
    that the existence of other people's workspaces is never revealed. A
    member without the role or key scope for `access`: `Forbidden`.
    """
    membership = (
        Membership.objects.select_related("workspace")
        .filter(user_id=_user_id(user), workspace__slug__iexact=slug)
        .first()
    )
    if membership is None or (
        api_key is not None
        and api_key.workspace_id is not None
        and api_key.workspace_id != membership.workspace_id
    ):
        raise NotFound(f"No workspace {slug!r}.", code="workspace_not_found")
    if access >= Access.WRITE and not membership.can_write:
        raise Forbidden("Viewers cannot change anything in this workspace.", code="read_only_role")
    if access >= Access.ADMIN and not membership.is_owner:
        raise Forbidden("Only an owner of this workspace can do this.", code="owner_required")
    if not key_allows(api_key, access):
        raise Forbidden(
            f"This API key has scope {api_key.scope!r}, which does not allow this.",  # type: ignore[union-attr]
            code="key_scope",
        )
    return membership.workspace, membership


def membership_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return workspace.memberships.select_related("user").order_by("user__username")


def agent_session_list(*, workspace: Workspace) -> QuerySet[AgentSession]:
    return AgentSession.objects.filter(workspace=workspace)
