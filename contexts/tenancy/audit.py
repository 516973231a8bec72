"""The audit trail: who changed what, when, and through which door.

Interfaces build an `Actor` (the user, the key when the call came with one,
and the origin) and hand it to the service they call; the service writes the
`AuditEvent` in the same transaction as the change, so a change without its
row (or a row without its change) cannot happen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from contexts.models import ApiKey, AuditEvent, Workspace
from contexts.secrets import redact_json, redact_secrets

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Origin = AuditEvent.Origin


@dataclass(frozen=True)
class Actor:
    """Who is making a change: a user, through a key or not, from one interface."""

    origin: str
    user: User | None = None
    key: ApiKey | None = None

    @classmethod
    def system(cls) -> Actor:
        """memflow itself (the daily cleanup, a migration): no person behind it."""
        return cls(origin=Origin.SYSTEM)

    @classmethod
    def for_request(cls, request: Any, *, origin: str) -> Actor:
        """The actor of an HTTP request: its logged-in user or its key's user and key."""
        auth = getattr(request, "auth", None)
        key = auth if isinstance(auth, ApiKey) else None
        user = getattr(request, "user", None)
        if user is not None and not user.is_authenticated:
            user = None
        if key is not None:
            user = key.user
        return cls(origin=origin, user=user, key=key)

    @property
    def label(self) -> str:
        who = self.user.get_username() if self.user is not None else "memflow"
        return f"{who} (key {self.key.prefix}…)" if self.key is not None else who


def audit_record(
    *,
    actor: Actor | None,
    workspace: Workspace | None,
    action: str,
    target: str = "",
    before: str = "",
    after: str = "",
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write one audit row. Call inside the transaction that makes the change.

    Its texts pass the rule for whatever memflow keeps: a credential in them is
    masked (`contexts.secrets`), since the audit log is shown and exported.
    """
    actor = actor or Actor.system()
    return AuditEvent.objects.create(
        workspace=workspace,
        user=actor.user,
        key=actor.key,
        origin=actor.origin,
        action=action,
        target=target[:120],
        before=redact_secrets(before) if before else before,
        after=redact_secrets(after) if after else after,
        detail=redact_json(detail) if detail else {},
    )


def audit_list(
    *,
    workspace: Workspace,
    target: str | None = None,
    username: str | None = None,
    action: str | None = None,
    origin: str | None = None,
) -> QuerySet[AuditEvent]:
    """A workspace's audit rows, newest first, optionally narrowed.

    Uses index: auditevent_recent_idx, or auditevent_target_idx with `target`.
    `action` matches a whole action ("memory.forget") or a family ("memory").
    """
    qs = AuditEvent.objects.filter(workspace=workspace)
    if target:
        qs = qs.filter(target=target)
    if username:
        qs = qs.filter(user__username__iexact=username)
    if action:
        qs = (
            qs.filter(action=action)
            if "." in action
            else qs.filter(action__startswith=f"{action}.")
        )
    if origin:
        qs = qs.filter(origin=origin)
    return qs.select_related("user", "key").order_by("-at", "-id")


def audit_actions(*, workspace: Workspace) -> list[str]:
    """The actions that occur in a workspace's trail (the Activity page's filter)."""
    return list(
        AuditEvent.objects.filter(workspace=workspace)
        .values_list("action", flat=True)
        .distinct()
        .order_by("action")
    )


def audit_scrub(*, workspace: Workspace, target: str) -> int:
    """Drop the texts kept in `target`'s rows (a purge): who and when stay."""
    return AuditEvent.objects.filter(workspace=workspace, target=target).update(before="", after="")


# Apps say which targets' kept texts a reader may not see (memories: someone
# else's private entry); rows stay listed, their before/after come back empty.
TextGuard = Callable[[Workspace, set[str], Any], set[str]]
_TEXT_GUARDS: list[TextGuard] = []


def audit_register_text_guard(guard: TextGuard) -> None:
    if guard not in _TEXT_GUARDS:
        _TEXT_GUARDS.append(guard)


def audit_withhold(rows: Iterable[AuditEvent], *, workspace: Workspace, viewer: Any) -> list[Any]:
    """`rows` as `viewer` may read them: texts of guarded targets blanked (not saved)."""
    rows = list(rows)
    targets = {r.target for r in rows if r.before or r.after}
    hidden: set[str] = set()
    for guard in _TEXT_GUARDS:
        if targets:
            hidden |= guard(workspace, targets, viewer)
    for row in rows:
        if row.target in hidden:
            row.before = row.after = ""
    return rows
