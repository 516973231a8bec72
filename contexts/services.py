"""Writes in the `contexts` app. Every interface (REST, dashboard, CLI) calls these."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from contexts.errors import Conflict, Forbidden, Invalid, NotFound
from contexts.models import AgentSession, ApiKey, Membership, Workspace
from contexts.selectors import hash_key

if TYPE_CHECKING:
    from django.contrib.auth.models import User

KEY_PREFIX = "mf_"
_FIRST_RUN_LOCK = 0x6D66_0001  # "mf" 1: any constant unique to this lock


def user_create(
    *, username: str, password: str | None, email: str = "", admin: bool = False
) -> User:
    UserModel = get_user_model()
    username = username.strip()
    if not username:
        raise Invalid("A username is required.", code="username_required")
    if UserModel.objects.filter(username__iexact=username).exists():
        raise Conflict(f"User {username!r} already exists.", code="user_exists")
    if admin:
        user = UserModel.objects.create_superuser(username=username, email=email, password=password)
    else:
        user = UserModel.objects.create_user(username=username, email=email, password=password)
    return cast("User", user)


def workspace_create(*, user: User, slug: str, name: str = "") -> Workspace:
    """Create a workspace; its creator becomes its owner."""
    clean = slugify(slug)
    if not clean or clean != slug.lower():
        raise Invalid(
            "A workspace slug is lower-case letters, digits, '-' and '_'.", code="invalid_slug"
        )
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(slug=clean, name=name or clean, created_by=user)
            Membership.objects.create(user=user, workspace=workspace, role=Membership.Role.OWNER)
    except IntegrityError:
        raise Conflict(f"The slug {clean!r} is taken.", code="slug_taken") from None
    return workspace


def workspace_update(*, workspace: Workspace, name: str | None = None) -> Workspace:
    if name is not None:
        if not name.strip():
            raise Invalid("A workspace name cannot be empty.", code="invalid_name")
        workspace.name = name.strip()
        workspace.save(update_fields=["name"])
    return workspace


def workspace_delete(*, workspace: Workspace) -> None:
    workspace.delete()


def membership_set(*, workspace: Workspace, username: str, role: str) -> Membership:
    """Add a user to a workspace, or change their role."""
    UserModel = get_user_model()
    if role not in Membership.Role.values:
        raise Invalid(f"Unknown role {role!r}.", code="invalid_role")
    user = UserModel.objects.filter(username__iexact=username).first()
    if user is None:
        raise NotFound(f"No user {username!r}.", code="user_not_found")
    with transaction.atomic():
        memberships = Membership.objects.select_for_update().filter(workspace=workspace)
        existing = {m.user_id: m for m in memberships}
        membership = existing.get(user.pk)
        if membership is None:
            return Membership.objects.create(user=user, workspace=workspace, role=role)
        _refuse_losing_last_owner(list(existing.values()), membership, new_role=role)
        membership.role = role
        membership.save(update_fields=["role"])
        return membership


def membership_remove(*, workspace: Workspace, username: str) -> None:
    with transaction.atomic():
        memberships = list(
            Membership.objects.select_for_update()
            .filter(workspace=workspace)
            .select_related("user")
        )
        target = next((m for m in memberships if m.user.username.lower() == username.lower()), None)
        if target is None:
            raise NotFound(
                f"{username!r} is not a member of this workspace.", code="member_not_found"
            )
        _refuse_losing_last_owner(memberships, target, new_role=None)
        target.delete()


def _refuse_losing_last_owner(
    memberships: list[Membership], changing: Membership, *, new_role: str | None
) -> None:
    owners = [m for m in memberships if m.is_owner]
    if changing.is_owner and new_role != Membership.Role.OWNER and len(owners) == 1:
        raise Conflict("A workspace must keep at least one owner.", code="last_owner")


@dataclass(frozen=True)
class CreatedKey:
    key: ApiKey
    raw: str  # shown to the person once, never stored


def apikey_create(
    *,
    user: User,
    name: str = "",
    scope: str = ApiKey.Scope.WRITE,
    workspace: Workspace | None = None,
    created_with: ApiKey | None = None,
) -> CreatedKey:
    """Mint a key. A key can only mint keys no stronger than itself."""
    if scope not in ApiKey.Scope.values:
        raise Invalid(f"Unknown scope {scope!r}: use read, write or admin.", code="invalid_scope")
    if (
        workspace is not None
        and not Membership.objects.filter(user=user, workspace=workspace).exists()
    ):
        raise NotFound(f"No workspace {workspace.slug!r}.", code="workspace_not_found")
    if created_with is not None:
        order = list(ApiKey.Scope.values)
        if order.index(scope) > order.index(created_with.scope):
            raise Forbidden("A key cannot create a key with a wider scope.", code="key_scope")
        if created_with.workspace_id is not None and (
            workspace is None or workspace.pk != created_with.workspace_id
        ):
            raise Forbidden(
                "A workspace-restricted key can only create keys for its own workspace.",
                code="key_scope",
            )
    body = secrets.token_urlsafe(32)
    raw = f"{KEY_PREFIX}{body}"
    key = ApiKey.objects.create(
        user=user,
        workspace=workspace,
        name=name.strip()[:100],
        prefix=raw[: len(KEY_PREFIX) + 8],
        key_hash=hash_key(raw),
        scope=scope,
    )
    return CreatedKey(key=key, raw=raw)


def apikey_revoke(*, user: User, key_id: int) -> ApiKey:
    key = ApiKey.objects.filter(pk=key_id, user=user).first()
    if key is None:
        raise NotFound(f"No key {key_id}.", code="key_not_found")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


@dataclass(frozen=True)
class FirstRun:
    username: str
    password: str
    workspace: Workspace
    raw_key: str


def first_run_bootstrap() -> FirstRun | None:
    """On an empty database: an admin user, a default workspace and a key.

    Returns None when any user exists already, so running it again is harmless.
    """
    UserModel = get_user_model()
    with transaction.atomic():
        # Two `memflow serve` starting at once must not both create an admin;
        # there is no row to lock yet, so serialise on an advisory lock.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_FIRST_RUN_LOCK])
        if UserModel.objects.exists():
            return None
        password = secrets.token_urlsafe(12)
        user = user_create(username="admin", password=password, admin=True)
        workspace = workspace_create(user=user, slug="default", name="Default workspace")
        created = apikey_create(user=user, name="first-run", scope=ApiKey.Scope.ADMIN)
    return FirstRun(username="admin", password=password, workspace=workspace, raw_key=created.raw)


def agent_session_get_or_create(
    *,
    workspace: Workspace,
    external_id: str,
    user: User | None = None,
    app: str = "",
    **fields: object,
) -> AgentSession:
    """The session a harness calls `external_id`, created on first sight."""
    external_id = external_id.strip()[:200]
    if not external_id:
        raise Invalid("A session id cannot be empty.", code="invalid_session")
    session, _ = AgentSession.objects.get_or_create(
        workspace=workspace,
        external_id=external_id,
        defaults={"user": user, "app": app[:64], **fields},
    )
    return session
