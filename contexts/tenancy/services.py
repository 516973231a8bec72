"""Writes in the `contexts` app. Every interface (REST, dashboard, CLI) calls these."""

from __future__ import annotations

import dataclasses
import json
import posixpath
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from contexts.declarations import (
    ENV_PREFIX,
    MAX_FILE_BYTES,
    Assembly,
    ConfigError,
    ContextConfig,
    DeclarationError,
    Preload,
    assemble,
    normalize_path,
    parse_declaration,
    sha256_text,
)
from contexts.errors import Conflict, Forbidden, Invalid, NotFound
from contexts.models import (
    AgentSession,
    ApiKey,
    ContextDocument,
    Declaration,
    Membership,
    SessionEvent,
    Workspace,
)
from contexts.tenancy.audit import Actor, audit_record
from contexts.tenancy.selectors import (
    CONTEXT_ASSEMBLY_EVENT,
    CONTEXT_PRELOAD_EVENT,
    CONTEXT_SETTINGS_KEY,
    agent_session_check_owner,
    context_config_for,
    context_document_get,
    context_source_for,
    declaration_get,
    hash_key,
    key_may_manage,
)

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


def user_set_active(*, user: User, active: bool) -> User:
    """Let a user in or keep them out: an inactive user's logins and API keys are
    refused (contexts/tenancy/auth.py), their data and memberships are kept."""
    if user.is_active != active:
        user.is_active = active
        user.save(update_fields=["is_active"])
    return user


def user_set_password(*, user: User, password: str) -> User:
    """A new password, checked by the configured validators. The user's dashboard
    sessions end (Django's session hash changes); their API keys keep working."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    if not password:
        raise Invalid("The password is empty.", code="invalid_password")
    try:
        validate_password(password, user=user)
    except ValidationError as exc:
        raise Invalid(" ".join(exc.messages), code="invalid_password") from None
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


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


def workspace_update(
    *,
    workspace: Workspace,
    name: str | None = None,
    slug: str | None = None,
    actor: Actor | None = None,
) -> Workspace:
    """Rename a workspace. A new `slug` changes its URLs and what clients name it
    (MEMFLOW_WORKSPACE); its data, keys and members stay with it."""
    fields = []
    before = {"name": workspace.name, "slug": workspace.slug}
    if name is not None:
        if not name.strip():
            raise Invalid("A workspace name cannot be empty.", code="invalid_name")
        workspace.name = name.strip()
        fields.append("name")
    if slug is not None and slug != workspace.slug:
        clean = slugify(slug)
        if not clean or clean != slug.lower():
            raise Invalid(
                "A workspace slug is lower-case letters, digits, '-' and '_'.", code="invalid_slug"
            )
        if Workspace.objects.filter(slug__iexact=clean).exclude(pk=workspace.pk).exists():
            raise Conflict(f"The slug {clean!r} is taken.", code="slug_taken")
        workspace.slug = clean
        fields.append("slug")
    if fields:
        try:
            with transaction.atomic():
                workspace.save(update_fields=fields)
                after = {"name": workspace.name, "slug": workspace.slug}
                if after != before:
                    audit_record(
                        actor=actor,
                        workspace=workspace,
                        action="workspace.rename",
                        target="workspace",
                        before=json.dumps(before, sort_keys=True),
                        after=json.dumps(after, sort_keys=True),
                    )
        except IntegrityError:  # taken between the check and the write
            raise Conflict(f"The slug {workspace.slug!r} is taken.", code="slug_taken") from None
    return workspace


def workspace_delete(*, workspace: Workspace) -> None:
    workspace.delete()


def membership_set(
    *,
    workspace: Workspace,
    username: str,
    role: str,
    existing_only: bool | None = None,
    actor: Actor | None = None,
) -> Membership:
    """Add a user to a workspace, or change their role.

    `existing_only=False` only adds (a member already: `already_member`);
    `True` only changes a member's role (not a member: `member_not_found`).
    """
    UserModel = get_user_model()
    if role not in Membership.Role.values:
        raise Invalid(f"Unknown role {role!r}: use owner, editor or viewer.", code="invalid_role")
    user = UserModel.objects.filter(username__iexact=username).first()
    if user is None:
        raise NotFound(f"No user {username!r}.", code="user_not_found")
    with transaction.atomic():
        memberships = Membership.objects.select_for_update().filter(workspace=workspace)
        existing = {m.user_id: m for m in memberships}
        membership = existing.get(user.pk)
        before = membership.role if membership is not None else ""
        if membership is None:
            if existing_only:
                raise NotFound(
                    f"{user.username!r} is not a member of {workspace.slug}.",
                    code="member_not_found",
                )
            membership = Membership.objects.create(user=user, workspace=workspace, role=role)
        elif existing_only is False:
            raise Conflict(
                f"{user.username!r} is already a member of {workspace.slug} "
                f"(role {membership.role}).",
                code="already_member",
            )
        else:
            _refuse_losing_last_owner(list(existing.values()), membership, new_role=role)
            membership.role = role
            membership.save(update_fields=["role"])
        if before != role:
            audit_record(
                actor=actor,
                workspace=workspace,
                action="member.add" if not before else "member.role",
                target=f"member:{user.get_username()}",
                before=before,
                after=role,
            )
        return membership


def membership_remove(*, workspace: Workspace, username: str, actor: Actor | None = None) -> None:
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
        audit_record(
            actor=actor,
            workspace=workspace,
            action="member.remove",
            target=f"member:{target.user.get_username()}",
            before=target.role,
        )


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
    actor: Actor | None = None,
) -> CreatedKey:
    """Mint a key. Through a key (`created_with`): only an unrestricted key
    can, and only keys no stronger than itself (`selectors.key_may_manage`)."""
    if scope not in ApiKey.Scope.values:
        raise Invalid(f"Unknown scope {scope!r}: use read, write or admin.", code="invalid_scope")
    if (
        workspace is not None
        and not Membership.objects.filter(user=user, workspace=workspace).exists()
    ):
        raise NotFound(f"No workspace {workspace.slug!r}.", code="workspace_not_found")
    if created_with is not None:
        if created_with.workspace_id is not None:
            raise Forbidden(
                "A workspace-restricted key cannot create keys; use an unrestricted key "
                "or the dashboard.",
                code="key_scope",
            )
        if not key_may_manage(created_with, scope=scope):
            raise Forbidden("A key cannot create a key with a wider scope.", code="key_scope")
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
    _audit_key(key, action="key.create", actor=actor)
    return CreatedKey(key=key, raw=raw)


def _audit_key(key: ApiKey, *, action: str, actor: Actor | None) -> None:
    """A key's audit row: in its workspace, or account-level for an unrestricted key."""
    audit_record(
        actor=actor,
        workspace=key.workspace,
        action=action,
        target=f"key:{key.pk}",
        detail={"prefix": key.prefix, "name": key.name, "scope": key.scope, "owner": key.user_id},
    )


def apikey_revoke(
    *, user: User, key_id: int, revoked_with: ApiKey | None = None, actor: Actor | None = None
) -> ApiKey:
    """Revoke one of the user's keys. Any key may revoke itself; through a key
    (`revoked_with`) another needs an unrestricted write or admin key of a
    scope at least as wide; a dashboard login (no key) revokes any."""
    key = ApiKey.objects.filter(pk=key_id, user=user).first()
    if key is None:
        raise NotFound(f"No key {key_id}.", code="key_not_found")
    if revoked_with is not None and key.pk != revoked_with.pk:
        if revoked_with.workspace_id is not None:
            raise Forbidden("A workspace-restricted key can only revoke itself.", code="key_scope")
        if revoked_with.scope == ApiKey.Scope.READ:
            raise Forbidden("A read-only key can only revoke itself.", code="key_scope")
        if not key_may_manage(revoked_with, scope=key.scope, target=key):
            raise Forbidden("A key cannot revoke a key with a wider scope.", code="key_scope")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        _audit_key(key, action="key.revoke", actor=actor)
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
    user: User,
    app: str = "",
    **fields: object,
) -> AgentSession:
    """`user`'s session the harness calls `external_id`, created on first sight.

    Another user's session of that id is refused (403
    `session_belongs_to_another_user`), never joined. A caller who may not
    write here (a read key, a viewer) should not create one: use
    `selectors.agent_session_own` instead.
    """
    external_id = session_external_id_clean(external_id)
    session, _ = AgentSession.objects.get_or_create(
        workspace=workspace,
        external_id=external_id,
        defaults={"user": user, "app": app[:64], **fields},
    )
    agent_session_check_owner(session=session, user=user)
    return session


def session_external_id_clean(external_id: str) -> str:
    """A harness's session id as stored (trimmed, at most 200 characters), or 400."""
    external_id = external_id.strip()[:200]
    if not external_id:
        raise Invalid("A session id cannot be empty.", code="invalid_session")
    if "\x00" in external_id:
        # Postgres refuses NUL in text: said here, not as a server error.
        raise Invalid("A session id cannot contain a NUL character.", code="invalid_session")
    return external_id


# --- declarations, stored documents and context assembly -----------------------

MAX_PATH_CHARS = 4096
MAX_DOCUMENTS_PER_CALL = 1000


def _clean_path(value: str, *, what: str) -> str:
    """An absolute, normalised POSIX path, as the resolver compares them."""
    if not isinstance(value, str) or not value.startswith("/"):
        raise Invalid(f"The {what} must be an absolute path.", code="invalid_path")
    if "\x00" in value or len(value) > MAX_PATH_CHARS:
        raise Invalid(f"The {what} {value[:80]!r} is not a usable path.", code="invalid_path")
    _check_utf8(value, what=what)
    return normalize_path(value)


def _check_utf8(text: str, *, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid(f"The {what} is not valid Unicode text.", code="invalid_text") from None
    if "\x00" in text:
        raise Invalid(f"The {what} contains a NUL character.", code="invalid_text")


def context_config_set(*, workspace: Workspace, options: Mapping[str, Any]) -> ContextConfig:
    """Replace the workspace's resolver options (spelt as in the design: `perFileBytes`…)."""
    try:
        config = ContextConfig.from_mapping(options)
    except ConfigError as exc:
        raise Invalid(f"Context options: {exc}.", code="invalid_config") from None
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        locked.settings = {**(locked.settings or {}), CONTEXT_SETTINGS_KEY: config.to_mapping()}
        locked.save(update_fields=["settings"])
    workspace.settings = locked.settings
    return config


def _declaration_file(workspace: Workspace) -> str:
    try:
        return context_config_for(workspace=workspace).declaration_file
    except ConfigError:
        return ContextConfig().declaration_file


def declaration_store(
    *, workspace: Workspace, directory: str, source_text: str
) -> tuple[Declaration, bool]:
    """Create or replace what `directory` declares; (declaration, created).

    A declaration that does not parse is refused with its line number
    (`invalid_declaration`, `line`), so a stored one always parses.
    """
    directory = _clean_path(directory, what="directory")
    _check_utf8(source_text, what="declaration")
    path = posixpath.join(directory, _declaration_file(workspace))
    try:
        parsed = parse_declaration(source_text, path=path)
    except DeclarationError as exc:
        raise Invalid(str(exc), code="invalid_declaration", extra={"line": exc.line}) from None
    declaration, created = Declaration.objects.update_or_create(
        workspace=workspace,
        directory=directory,
        defaults={
            "source_text": source_text,
            "system_prompt": list(parsed.system_prompt),
            "preload": list(parsed.preload),
            "inherit": parsed.inherit,
        },
    )
    return declaration, created


def declaration_delete(*, workspace: Workspace, declaration_id: int) -> None:
    declaration_get(workspace=workspace, declaration_id=declaration_id).delete()


@dataclass(frozen=True)
class StoredDocument:
    path: str
    sha256: str
    bytes: int


def context_documents_store(
    *, workspace: Workspace, documents: Sequence[tuple[str, str]]
) -> list[StoredDocument]:
    """Create or replace documents by path, all or none.

    A declaration file is not a document: it is stored with `declaration_store`.
    """
    if len(documents) > MAX_DOCUMENTS_PER_CALL:
        raise Invalid(
            f"At most {MAX_DOCUMENTS_PER_CALL} documents at a time.", code="too_many_documents"
        )
    suffix = "/" + _declaration_file(workspace)
    rows: dict[str, ContextDocument] = {}
    stored = []
    for raw_path, content in documents:
        path = _clean_path(raw_path, what="document path")
        if path.endswith(suffix):
            raise Invalid(
                f"{path} is a declaration file: store it as a declaration.",
                code="declaration_path",
            )
        if path in rows:
            raise Invalid(f"{path} is given twice.", code="duplicate_path")
        _check_utf8(content, what=f"content of {path}")
        size = len(content.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise Invalid(
                f"{path} has {size} bytes; a context document may have {MAX_FILE_BYTES}.",
                code="document_too_large",
            )
        digest = sha256_text(content)
        rows[path] = ContextDocument(workspace=workspace, path=path, content=content, sha256=digest)
        stored.append(StoredDocument(path=path, sha256=digest, bytes=size))
    ContextDocument.objects.bulk_create(
        list(rows.values()),
        update_conflicts=True,
        unique_fields=["workspace", "path"],
        update_fields=["content", "sha256", "updated_at"],
    )
    return stored


def context_document_delete(*, workspace: Workspace, document_id: int) -> None:
    context_document_get(workspace=workspace, document_id=document_id).delete()


@dataclass(frozen=True)
class DeliveredContext:
    """An assembly as given to a session: the preload only if it was never given."""

    session: AgentSession
    assembly: Assembly
    preload: Preload | None
    preload_delivered_at: datetime | None  # when it was given before, if it was
    event: SessionEvent


def context_assemble(
    *,
    workspace: Workspace,
    session: AgentSession,
    directory: str,
    device: str | None = None,
    hostname: str | None = None,
    env: Mapping[str, str] | None = None,
    delegation_depth: int = 0,
) -> DeliveredContext:
    """Assemble `directory`'s context from the stored declarations and documents,
    and record it on the session."""
    directory = _clean_path(directory, what="directory")
    env = _clean_env(env or {})
    warnings = []
    try:
        config = context_config_for(workspace=workspace)
    except ConfigError as exc:
        config = ContextConfig()
        warnings.append(f"the workspace's context options are unusable ({exc}); defaults apply")
    assembly = assemble(
        source=context_source_for(workspace=workspace, config=config),
        directory=directory,
        config=config,
        env=env,
        device=device,
        hostname=hostname,
        delegation_depth=delegation_depth,
    )
    if warnings:
        assembly = dataclasses.replace(assembly, warnings=(*warnings, *assembly.warnings))
    return context_assembly_record(
        session=session,
        assembly=assembly,
        origin="server",
        request={
            "device": device or "",
            "hostname": hostname or "",
            "env": dict(sorted(env.items())),
            "delegation_depth": delegation_depth,
        },
    )


def _clean_env(env: Mapping[str, str]) -> dict[str, str]:
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX):
            raise Invalid(
                f"Only {ENV_PREFIX}* variables are accepted, not {name!r}.", code="invalid_env"
            )
        _check_utf8(value, what=name)
    return dict(env)


def context_assembly_from_json(data: Any) -> Assembly:
    """An assembly a client resolved (`memflow context --json`), checked."""
    try:
        _check_strings(data, what="assembly")
        return Assembly.from_json(data)
    except ValueError as exc:
        raise Invalid(f"The assembly is not usable: {exc}.", code="invalid_assembly") from None


def _check_strings(value: Any, *, what: str, depth: int = 0) -> None:
    """Every string in a JSON value is storable text (no NUL, no lone surrogate)."""
    if depth > 8:
        raise ValueError(f"{what} is nested too deeply")
    if isinstance(value, str):
        _check_utf8(value, what=what)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, what=what, depth=depth + 1)
            _check_strings(item, what=f"{what}.{key}", depth=depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, what=what, depth=depth + 1)


def context_assembly_record(
    *,
    session: AgentSession,
    assembly: Assembly | Mapping[str, Any],
    origin: str = "client",
    request: Mapping[str, Any] | None = None,
) -> DeliveredContext:
    """Record an assembly on the session's event log and decide its preload.

    For an assembly resolved on the agent's disk (`memflow context --json`,
    given as its JSON), `origin="client"`: its hashes are checked first.
    The preload is delivered only if the session has no `context.preload`
    event yet; the session row is locked meanwhile, so two concurrent first
    assemblies deliver it once. A section's text is stored only when its hash
    is not among the previous assembly's sections (`session_context_log`
    restores the rest).
    """
    if not isinstance(assembly, Assembly):
        assembly = context_assembly_from_json(assembly)
    with transaction.atomic():
        # The session row's lock makes its assemblies take turns, so the
        # preload check below and the preload event cannot interleave.
        list(AgentSession.objects.select_for_update().filter(pk=session.pk).values_list("pk"))
        delivered = session.events.filter(kind=CONTEXT_PRELOAD_EVENT).order_by("at", "id").first()
        previous = session.events.filter(kind=CONTEXT_ASSEMBLY_EVENT).order_by("-at", "-id").first()
        known = (
            {s.get("sha256") for s in previous.payload.get("sections", [])} if previous else set()
        )
        preload = assembly.preload if delivered is None else None
        payload: dict[str, Any] = {
            "origin": origin,
            "directory": assembly.directory,
            "request": dict(request or {}),
            "declarations": [d.to_json() for d in assembly.declarations],
            "sections": [
                {k: v for k, v in s.to_json().items() if k != "text"}
                | {"bytes": len(s.text.encode("utf-8"))}
                for s in assembly.sections
            ],
            "texts": {s.sha256: s.text for s in assembly.sections if s.sha256 not in known},
            "preload": None,
            "notes": list(assembly.notes),
            "warnings": list(assembly.warnings),
            "suppressed": assembly.suppressed,
        }
        if assembly.preload is not None:
            payload["preload"] = {
                "sha256": assembly.preload.sha256,
                "files": [f.to_json() for f in assembly.preload.files],
                "left_out": list(assembly.preload.left_out),
                "delivered": preload is not None,
            }
        event = SessionEvent.objects.create(
            session=session, kind=CONTEXT_ASSEMBLY_EVENT, payload=payload
        )
        if preload is not None:
            SessionEvent.objects.create(
                session=session,
                kind=CONTEXT_PRELOAD_EVENT,
                payload={"assembly_event": event.pk, **preload.to_json()},
            )
    return DeliveredContext(
        session=session,
        assembly=assembly,
        preload=preload,
        preload_delivered_at=delivered.at if delivered else None,
        event=event,
    )


def workspace_mute(*, workspace: Workspace, user: User, minutes: int, for_user: bool) -> str | None:
    """Mute the per-turn working context for a while (0 unmutes); the tools keep working.

    `for_user` mutes only this user's sessions in the workspace. Returns the
    ISO time the mute ends, or None when unmuted.
    """
    if minutes < 0 or minutes > 60 * 24 * 30:
        raise Invalid("Mute for 0 (off) to 43,200 minutes (30 days).", code="invalid_duration")
    until = (timezone.now() + timedelta(minutes=minutes)).isoformat() if minutes else None
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        settings = dict(locked.settings or {})
        if for_user:
            users = dict(settings.get("muted_users") or {})
            if until:
                users[str(user.pk)] = until
            else:
                users.pop(str(user.pk), None)
            settings["muted_users"] = users
        elif until:
            settings["muted_until"] = until
        else:
            settings.pop("muted_until", None)
        locked.settings = settings
        locked.save(update_fields=["settings"])
    workspace.settings = settings
    return until
