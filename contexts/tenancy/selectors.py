"""Reads in the `contexts` app, each scoped to what the caller may see."""

from __future__ import annotations

import enum
import hashlib
import posixpath
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from contexts.declarations import ContextConfig, StoredSource
from contexts.errors import Forbidden, Invalid, NotFound
from contexts.models import (
    AgentSession,
    ApiKey,
    ContextDocument,
    Declaration,
    Membership,
    Workspace,
)
from memflow_site.runtime.db import Columns, bound_rows

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    AnyUser = AbstractBaseUser | AnonymousUser

# last_used_at is informational; writing it on every request would put a
# row update on the hot path of every hook call.
_LAST_USED_RESOLUTION = timedelta(minutes=1)

# Where a workspace keeps its resolver options, inside `Workspace.settings`.
CONTEXT_SETTINGS_KEY = "context"
# The session event kinds of context assembly: every assembly, and the one
# delivery of a session's preload ("preload once per session" reads it).
CONTEXT_ASSEMBLY_EVENT = "context.assembly"
CONTEXT_PRELOAD_EVENT = "context.preload"


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


def apikey_list(*, user: AnyUser, by_key: ApiKey | None = None) -> QuerySet[ApiKey]:
    """The user's keys; asked through a key (`by_key`), only those it may manage.

    A dashboard login (no key) sees them all. A key restricted to a workspace
    sees only itself; an unrestricted one, itself and the keys of no wider
    scope than its own (see `key_may_manage`).
    """
    keys = ApiKey.objects.filter(user_id=_user_id(user)).select_related("workspace")
    if by_key is None:
        return keys
    if by_key.workspace_id is not None:
        return keys.filter(pk=by_key.pk)
    rank = _KEY_SCOPE_ALLOWS[ApiKey.Scope(by_key.scope)]
    scopes = [scope for scope, allows in _KEY_SCOPE_ALLOWS.items() if allows <= rank]
    return keys.filter(Q(pk=by_key.pk) | Q(scope__in=scopes))


def key_may_manage(key: ApiKey | None, *, scope: str, target: ApiKey | None = None) -> bool:
    """Whether `key` may manage (create, see, revoke) a key of `scope`.

    No key (a dashboard login): yes. A key always manages itself (`target`).
    Otherwise it needs no workspace restriction and a scope at least as wide.
    """
    if key is None or (target is not None and target.pk == key.pk):
        return True
    if key.workspace_id is not None:
        return False
    return _KEY_SCOPE_ALLOWS[ApiKey.Scope(key.scope)] >= _KEY_SCOPE_ALLOWS[ApiKey.Scope(scope)]


def key_allows(key: ApiKey | None, access: Access) -> bool:
    return key is None or _KEY_SCOPE_ALLOWS[ApiKey.Scope(key.scope)] >= access


def workspace_create_check(*, api_key: ApiKey | None) -> None:
    """Raise 403 `key_scope` unless this key may create a workspace (a dashboard login may).

    `POST workspaces/` and a hook's `create_workspace` both ask: a read key, or
    a key restricted to one workspace, creates none.
    """
    if api_key is not None and (
        api_key.workspace_id is not None or not key_allows(api_key, Access.WRITE)
    ):
        raise Forbidden("This API key cannot create workspaces.", code="key_scope")


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
    membership = _membership(user_id=_user_id(user), slug=slug)
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


_MEMBERSHIP = Columns.all(Membership, "ms")
_WORKSPACE = Columns.all(Workspace, "w")
# Every API request and hook asks this first. Uses index:
# workspace_slug_ci_unique (slugs are ASCII, so lower() folds as iexact does).
_MEMBERSHIP_SQL = f"""
    SELECT {_MEMBERSHIP.sql}, {_WORKSPACE.sql}
    FROM contexts_membership ms JOIN contexts_workspace w ON w.id = ms.workspace_id
    WHERE ms.user_id = %(user)s AND lower(w.slug) = lower(%(slug)s)
"""


def _membership(*, user_id: int, slug: str) -> Membership | None:
    """The user's membership of the workspace `slug` (any case), its workspace attached."""
    rows = bound_rows(_MEMBERSHIP_SQL, {"user": user_id, "slug": slug})
    if not rows:
        return None
    split = len(_MEMBERSHIP.names)
    membership: Membership = _MEMBERSHIP.instance(rows[0][:split])
    membership.workspace = _WORKSPACE.instance(rows[0][split:])
    return membership


def membership_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return workspace.memberships.select_related("user").order_by("user__username")


def agent_session_get(*, workspace: Workspace, external_id: str) -> AgentSession:
    """The session the harness calls `external_id` in this workspace, its user attached.

    For reading its log, as the dashboard's session page does: every member
    may. Anything that acts in a session goes through `agent_session_own`.
    """
    if "\x00" in external_id:
        # Postgres refuses NUL in text: said here, not as a server error.
        raise Invalid("A session id cannot contain a NUL character.", code="invalid_session")
    # Uses index: agentsession_external_unique.
    session = (
        AgentSession.objects.filter(workspace=workspace, external_id=external_id)
        .select_related("user")
        .first()
    )
    if session is None:
        raise NotFound(f"No session {external_id!r} in this workspace.", code="session_not_found")
    session.workspace = workspace
    return session


def agent_session_check_owner(*, session: AgentSession, user: AnyUser | None) -> None:
    """Raise 403 `session_belongs_to_another_user` unless `user` is the session's user.

    A harness's session id names one person's conversation: another member
    who sends the same id is refused rather than let into it (its frozen
    USER document, scratchpad, ledger and prompt log are its user's).
    """
    if user is None or session.user_id is None or session.user_id != _user_id(user):
        raise Forbidden(
            f"Session {session.external_id[:80]!r} belongs to another user of this "
            "workspace; use a session id of your own.",
            code="session_belongs_to_another_user",
        )


def agent_session_own(*, workspace: Workspace, external_id: str, user: AnyUser) -> AgentSession:
    """The caller's own session `external_id`: 404 `session_not_found` if there is none,
    403 `session_belongs_to_another_user` if it is someone else's."""
    session = agent_session_get(workspace=workspace, external_id=external_id)
    agent_session_check_owner(session=session, user=user)
    return session


# --- declarations and stored context documents ---------------------------------


def context_config_for(*, workspace: Workspace) -> ContextConfig:
    """The workspace's resolver options (`settings["context"]`); `ConfigError` if bad."""
    return ContextConfig.from_mapping((workspace.settings or {}).get(CONTEXT_SETTINGS_KEY))


class StoredDocuments(Mapping[str, str]):
    """A workspace's declarations and documents as the resolver's path -> text map.

    Every path is listed up front (one query), but a document's content is
    only fetched when the resolver reads it, so an assembly costs what it
    reads, not what the workspace holds. Declarations sit at
    `<directory>/<declarationFile>` and win over a document at that path.
    """

    def __init__(self, *, workspace: Workspace, declaration_file: str) -> None:
        self._workspace = workspace
        self._texts: dict[str, str] = {
            posixpath.join(directory, declaration_file): text
            for directory, text in Declaration.objects.filter(workspace=workspace).values_list(
                "directory", "source_text"
            )
        }
        self._paths = set(self._texts).union(
            ContextDocument.objects.filter(workspace=workspace).values_list("path", flat=True)
        )

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __getitem__(self, path: str) -> str:
        if path not in self._paths:
            raise KeyError(path)
        if path not in self._texts:
            content = (
                ContextDocument.objects.filter(workspace=self._workspace, path=path)
                .values_list("content", flat=True)
                .first()
            )
            if content is None:
                raise KeyError(path)
            self._texts[path] = content
        return self._texts[path]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._paths))

    def __len__(self) -> int:
        return len(self._paths)


def context_source_for(*, workspace: Workspace, config: ContextConfig) -> StoredSource:
    return StoredSource(
        StoredDocuments(workspace=workspace, declaration_file=config.declaration_file)
    )


def declaration_list(*, workspace: Workspace, directory: str = "") -> QuerySet[Declaration]:
    declarations = Declaration.objects.filter(workspace=workspace)
    if directory:
        declarations = declarations.filter(directory=directory)
    return declarations.order_by("directory")


def declaration_get(*, workspace: Workspace, declaration_id: int) -> Declaration:
    declaration = Declaration.objects.filter(workspace=workspace, pk=declaration_id).first()
    if declaration is None:
        raise NotFound(f"No declaration {declaration_id}.", code="declaration_not_found")
    return declaration


def context_document_list(*, workspace: Workspace, prefix: str = "") -> QuerySet[ContextDocument]:
    """Documents without their content (`defer`): listings never need it."""
    documents = ContextDocument.objects.filter(workspace=workspace).defer("content")
    if prefix:
        documents = documents.filter(path__startswith=prefix)
    return documents.order_by("path")


def context_document_get(*, workspace: Workspace, document_id: int) -> ContextDocument:
    document = ContextDocument.objects.filter(workspace=workspace, pk=document_id).first()
    if document is None:
        raise NotFound(f"No document {document_id}.", code="document_not_found")
    return document


def session_context_log(*, session: AgentSession) -> list[dict[str, Any]]:
    """Every context assembly a session was given, oldest first, texts restored.

    An assembly event stores a section's text only when it differs from the
    previous assembly's (see `services.context_assembly_record`), so the
    texts are carried forward here: each entry's sections have their `text`.
    """
    texts: dict[str, str] = {}
    log = []
    events = session.events.filter(kind=CONTEXT_ASSEMBLY_EVENT).order_by("at", "id")
    for event in events:
        payload = dict(event.payload)
        texts.update(payload.pop("texts", {}))
        payload["sections"] = [
            {**section, "text": texts.get(section["sha256"])}
            for section in payload.get("sections", [])
        ]
        log.append({"id": event.pk, "at": event.at, **payload})
    return log
