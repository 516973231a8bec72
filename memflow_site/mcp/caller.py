"""Who is calling the MCP endpoint, and in which workspace.

Resolved once per HTTP request, before the MCP SDK sees it, exactly as the
REST API resolves a request: the bearer key by its hash (revoked keys
refused, `last_used_at` refreshed; wrong keys counted against the client's
address, which past the limit is refused with 429 `too_many_failed_attempts`,
as `contexts.tenancy.auth` does), then the workspace through `workspace_access`
(outsiders get not-found). Tools check write access per call, through the
same selector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.contrib.auth.models import User

from contexts.errors import Invalid, MemflowError
from contexts.models import ApiKey, Membership, Workspace
from contexts.tenancy.auth import apikey_authenticate
from contexts.tenancy.selectors import Access, key_allows, workspace_access
from memflow_site.mcp.profiles import DEFAULT_PROFILE, PROFILES

# Where the endpoint leaves the caller in the ASGI scope; tools read it back
# from the request the SDK hands them.
SCOPE_KEY = "memflow.mcp.caller"

MAX_APP_CHARS = 64  # Memory.app and AgentSession.app
MAX_SESSION_CHARS = 200  # AgentSession.external_id


class Unauthenticated(MemflowError):
    status_code = 401
    code = "not_authenticated"


@dataclass(frozen=True)
class Caller:
    user: User
    key: ApiKey
    workspace: Workspace
    membership: Membership
    app: str  # `?app=`: tags what this connection writes
    session_id: str  # `?session=`: the default session of every tool call
    tools: str = DEFAULT_PROFILE  # `?tools=`: the tool profile this request is served

    @property
    def can_write(self) -> bool:
        """Whether this caller may write here: an editor or owner, with a key that allows it."""
        return self.membership.can_write and key_allows(self.key, Access.WRITE)

    def require(self, access: Access) -> None:
        """Raise unless the caller may do `access` here (role and key scope, as REST)."""
        workspace_access(user=self.user, slug=self.workspace.slug, access=access, api_key=self.key)


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer …` header, as `contexts.tenancy.auth.bearer_token`."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def caller_resolve(*, authorization: str, params: Mapping[str, str], address: str = "") -> Caller:
    """The authenticated caller of one request, or the error to answer with.

    Messages and codes are the REST API's (DRF's `not_authenticated` and
    `authentication_failed`, then `workspace_access`'s), so a client sees
    one vocabulary whichever door it came in by. `address` is the client's,
    what wrong keys are counted against.
    """
    raw = bearer_token(authorization)
    if raw is None:
        raise Unauthenticated("Authentication credentials were not provided.")
    key = apikey_authenticate(raw_key=raw, address=address)
    if key is None:
        raise Unauthenticated("Invalid or revoked API key.", code="authentication_failed")
    if not key.user.is_active:
        raise Unauthenticated("This key's user is disabled.", code="authentication_failed")
    slug = params.get("workspace", "").strip()
    if not slug and key.workspace is not None:
        slug = key.workspace.slug
    if not slug:
        raise Invalid(
            "Say which workspace: connect to /mcp/?workspace=<slug>, or use a key "
            "restricted to one workspace.",
            code="workspace_required",
        )
    workspace, membership = workspace_access(
        user=key.user, slug=slug, access=Access.READ, api_key=key
    )
    app = params.get("app", "").strip()
    session_id = params.get("session", "").strip()
    if "\x00" in app or "\x00" in session_id:
        raise Invalid("`app` and `session` cannot contain a NUL character.", code="invalid_session")
    if len(app) > MAX_APP_CHARS or len(session_id) > MAX_SESSION_CHARS:
        raise Invalid(
            f"`app` takes {MAX_APP_CHARS} characters, `session` {MAX_SESSION_CHARS}.",
            code="field_too_long",
        )
    tools = params.get("tools", "").strip() or DEFAULT_PROFILE
    if tools not in PROFILES:
        raise Invalid(
            f"No tool profile {tools[:40]!r}: `tools` is one of {', '.join(PROFILES)}.",
            code="unknown_tools_profile",
        )
    return Caller(
        tools=tools,
        user=key.user,
        key=key,
        workspace=workspace,
        membership=membership,
        app=app,
        session_id=session_id,
    )
