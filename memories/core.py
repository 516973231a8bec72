"""Core memory: the two bounded fact documents of the HME design, and the archive tier.

USER (one per user, every workspace) and MEMORY (one per workspace) hold
fact lines ending in ` §`, under a hard character limit: 1,597 and 2,584 by
default (F17 and F18; their ratio is φ). A write that would pass the limit is
refused — never truncated — and the answer names the least recently used
lines as candidates for the archive, where a fact keeps living as a
long-term memory (compartment = its category).

Every write is read-merge-write under a row lock: the line edit is applied to
the latest stored version, never to a session's frozen copy, so concurrent
sessions never lose each other's updates. A session sees the documents as
they were when it started (`core_freeze`), however they change afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from contexts.errors import Conflict, Invalid, MemflowError, NotFound
from contexts.models import AgentSession, Workspace
from contexts.secrets import find_secret
from contexts.tenancy.audit import Actor, audit_record
from contexts.tenancy.knobs import knob
from memories.models import CoreMemory, CoreRevision, Memory

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MARK = "§"
DEFAULT_LIMITS: dict[str, int] = {"user": 1597, "memory": 2584}
LABELS: dict[str, str] = {"user": "USER", "memory": "MEMORY"}
RULE = "═" * 46

ARCHIVE_CATEGORIES = ("facts", "preferences", "methods", "lessons")
# The knob holding the days an archived line lives, per value tier (0: never expires).
ARCHIVE_TTL_KNOBS: dict[str, str] = {
    "facts": "archive_ttl_facts_days",
    "preferences": "archive_ttl_preferences_days",
    "methods": "archive_ttl_methods_days",
    "lessons": "archive_ttl_lessons_days",
}


class CoreFull(MemflowError):
    status_code = 409
    code = "core_full"


class LineNotFound(MemflowError):
    status_code = 404
    code = "not_found"


class Ambiguous(MemflowError):
    status_code = 409
    code = "ambiguous"


def scope_for(target: str) -> str:
    if target not in (CoreMemory.Scope.USER, CoreMemory.Scope.WORKSPACE):
        raise NotFound(
            f"No core document {target!r}: use 'user' or 'memory'.", code="unknown_target"
        )
    return target


# --- the line format ---------------------------------------------------------------


def parse_lines(content: str) -> list[str]:
    """The fact lines of a document, each as stored (ending in ` §`)."""
    return [line for line in content.splitlines() if line.strip()]


def join_lines(lines: list[str]) -> str:
    return "\n".join(lines)


def fact_of(line: str) -> str:
    text = line.rstrip()
    return text[: -len(MARK)].rstrip() if text.endswith(MARK) else text


def clean_fact(content: str) -> str:
    """One fact line from what a model sent: one line, no trailing mark, no secret."""
    fact = fact_of(" ".join(content.split()))
    if not fact:
        raise Invalid("A fact needs some text.", code="empty_fact")
    label = find_secret(fact)
    if label:
        from memories.services import SecretDetected

        raise SecretDetected(f"The fact looks like it contains a {label}; it was not stored.")
    return fact


def as_line(fact: str) -> str:
    return f"{fact} {MARK}"


def render(content: str, *, scope: str, limit: int) -> str:
    """The document as the model sees it, with its usage header."""
    chars = len(content)
    percent = round(100 * chars / limit) if limit else 0
    header = f"{LABELS[scope]} [{percent}% — {chars:,}/{limit:,} chars]"
    body = content if content else "(empty)"
    return f"{RULE}\n{header}\n{RULE}\n{body}"


# --- reading -------------------------------------------------------------------------


@dataclass
class CoreView:
    scope: str
    content: str
    limit: int
    version: int
    lines: list[str] = field(default_factory=list)
    # USER belongs to its user: another member learns that it exists, not what it says.
    hidden: bool = False

    @property
    def chars(self) -> int:
        return len(self.content)

    @property
    def percent(self) -> int:
        return round(100 * self.chars / self.limit) if self.limit else 0

    @property
    def rendered(self) -> str:
        return render(self.content, scope=self.scope, limit=self.limit)


def _owner_filter(scope: str, *, user: User | None, workspace: Workspace) -> dict[str, Any]:
    if scope == CoreMemory.Scope.USER:
        if user is None:
            raise Invalid("USER core memory needs a user.", code="user_required")
        return {"scope": scope, "user": user}
    return {"scope": scope, "workspace": workspace}


def _default_limit(scope: str, workspace: Workspace) -> int:
    if scope == CoreMemory.Scope.WORKSPACE:
        return int(knob(workspace, "core_memory_chars"))
    return DEFAULT_LIMITS[scope]


def core_view(*, scope: str, user: User | None, workspace: Workspace) -> CoreView:
    doc = CoreMemory.objects.filter(**_owner_filter(scope, user=user, workspace=workspace)).first()
    if doc is None:
        return CoreView(scope=scope, content="", limit=_default_limit(scope, workspace), version=0)
    return CoreView(
        scope=scope,
        content=doc.content,
        limit=doc.char_limit,
        version=doc.version,
        lines=parse_lines(doc.content),
    )


def _locked_document(scope: str, *, user: User | None, workspace: Workspace) -> CoreMemory:
    """The document row, created if missing, locked for this transaction."""
    owner = _owner_filter(scope, user=user, workspace=workspace)
    doc = CoreMemory.objects.select_for_update().filter(**owner).first()
    if doc is not None:
        return doc
    try:
        with transaction.atomic():
            CoreMemory.objects.create(**owner, char_limit=_default_limit(scope, workspace))
    except IntegrityError:
        pass  # another session created it first: lock theirs
    return CoreMemory.objects.select_for_update().get(**owner)


def lru_candidates(doc: CoreMemory, *, count: int = 3) -> list[dict[str, Any]]:
    """The lines touched longest ago: what to move to the archive first."""
    meta = doc.line_meta or {}
    lines = parse_lines(doc.content)

    def touched(line: str) -> str:
        return str(meta.get(fact_of(line), {}).get("touched", ""))

    ordered = sorted(enumerate(lines), key=lambda pair: (touched(pair[1]), pair[0]))
    return [
        {
            "line": line,
            "chars": len(line),
            "last_touched": touched(line) or None,
            "uses": meta.get(fact_of(line), {}).get("uses", 0),
        }
        for _, line in ordered[:count]
    ]


# --- writing --------------------------------------------------------------------------


@dataclass
class CoreEdit:
    outcome: str  # added | replaced | removed | unchanged | reverted | imported
    view: CoreView
    revision: CoreRevision | None


def _matching(lines: list[str], old_text: str) -> list[int]:
    if not old_text:
        raise Invalid("old_text is required for replace and remove.", code="old_text_required")
    return [i for i, line in enumerate(lines) if old_text in line]


def _one_match(lines: list[str], old_text: str) -> int:
    matches = _matching(lines, old_text)
    if not matches:
        raise LineNotFound(f"No line contains {old_text!r}.")
    if len(matches) > 1:
        raise Ambiguous(
            f"{len(matches)} lines contain {old_text!r}; give more of the line.",
            extra={"matches": [lines[i] for i in matches]},
        )
    return matches[0]


def _check_limit(doc: CoreMemory, new_content: str) -> None:
    if len(new_content) > doc.char_limit:
        raise CoreFull(
            f"{LABELS[doc.scope]} would hold {len(new_content):,} of {doc.char_limit:,} characters; "
            "nothing was changed. Remove or replace a line, or move one to the archive.",
            extra={
                "chars": len(doc.content),
                "would_be": len(new_content),
                "limit": doc.char_limit,
                "candidates": lru_candidates(doc),
            },
        )


def _save(
    doc: CoreMemory,
    *,
    new_lines: list[str],
    action: str,
    user: User | None,
    session: AgentSession | None,
    actor: Actor | None,
    workspace: Workspace,
    touched: list[str] = (),  # type: ignore[assignment]
    detail: dict[str, Any] | None = None,
) -> CoreRevision:
    """Write the new version, its revision and (for a real change) its audit row.

    The revision's user is whoever made the change (`actor`), which for the
    shared MEMORY document is not its owner (`user` is None there).
    """
    now = timezone.now().isoformat()
    before = doc.content
    doc.content = join_lines(new_lines)
    meta = dict(doc.line_meta or {})
    facts = {fact_of(line) for line in new_lines}
    meta = {fact: info for fact, info in meta.items() if fact in facts}
    for fact in facts:
        meta.setdefault(fact, {"added": now, "touched": now, "uses": 0})
    for fact in touched:
        entry = meta.setdefault(fact, {"added": now, "touched": now, "uses": 0})
        entry["touched"] = now
        entry["uses"] = int(entry.get("uses", 0)) + 1
    doc.line_meta = meta
    doc.version += 1
    doc.save()
    who = actor.user if actor is not None and actor.user is not None else user
    revision = CoreRevision.objects.create(
        core=doc,
        version=doc.version,
        action=action,
        user=who,
        session=session,
        before=before,
        after=doc.content,
        detail=detail or {},
    )
    if action != "touch":
        # USER is private to its owner: its audit row says that it changed, not how.
        private = doc.scope == CoreMemory.Scope.USER
        audit_record(
            actor=actor or Actor(origin="system", user=user),
            workspace=workspace,
            action=f"core.{action}",
            target=f"core:{doc.scope}",
            before="" if private else before,
            after="" if private else doc.content,
            detail={"version": doc.version, **({} if private else detail or {})},
        )
    return revision


def _view(doc: CoreMemory) -> CoreView:
    return CoreView(
        scope=doc.scope,
        content=doc.content,
        limit=doc.char_limit,
        version=doc.version,
        lines=parse_lines(doc.content),
    )


def core_edit(
    *,
    scope: str,
    action: str,
    workspace: Workspace,
    user: User | None,
    content: str = "",
    old_text: str = "",
    session: AgentSession | None = None,
    actor: Actor | None = None,
) -> CoreEdit:
    """add / replace / remove one fact line, read-merge-write under the row lock."""
    if action not in ("add", "replace", "remove"):
        raise Invalid(
            f"Unknown action {action!r}: use add, replace or remove.", code="invalid_action"
        )
    fact = clean_fact(content) if action in ("add", "replace") else ""
    with transaction.atomic():
        doc = _locked_document(scope, user=user, workspace=workspace)
        lines = parse_lines(doc.content)
        if action == "add":
            if any(fact_of(line) == fact for line in lines):
                revision = _save(
                    doc,
                    new_lines=lines,
                    action="touch",
                    user=user,
                    session=session,
                    actor=actor,
                    workspace=workspace,
                    touched=[fact],
                )
                return CoreEdit(outcome="unchanged", view=_view(doc), revision=revision)
            new_lines = [*lines, as_line(fact)]
            _check_limit(doc, join_lines(new_lines))
            revision = _save(
                doc,
                new_lines=new_lines,
                action="add",
                user=user,
                session=session,
                actor=actor,
                workspace=workspace,
                detail={"line": as_line(fact)},
            )
            return CoreEdit(outcome="added", view=_view(doc), revision=revision)
        index = _one_match(lines, old_text)
        old_line = lines[index]
        if action == "replace":
            new_lines = [*lines[:index], as_line(fact), *lines[index + 1 :]]
            _check_limit(doc, join_lines(new_lines))
            revision = _save(
                doc,
                new_lines=new_lines,
                action="replace",
                user=user,
                session=session,
                actor=actor,
                workspace=workspace,
                touched=[fact],
                detail={"old": old_line, "new": as_line(fact)},
            )
            return CoreEdit(outcome="replaced", view=_view(doc), revision=revision)
        new_lines = [*lines[:index], *lines[index + 1 :]]
        revision = _save(
            doc,
            new_lines=new_lines,
            action="remove",
            user=user,
            session=session,
            actor=actor,
            workspace=workspace,
            detail={"old": old_line},
        )
        return CoreEdit(outcome="removed", view=_view(doc), revision=revision)


def core_set_limit(
    *,
    scope: str,
    workspace: Workspace,
    user: User | None,
    limit: int,
    actor: Actor | None = None,
) -> CoreView:
    if limit < 100 or limit > 100_000:
        raise Invalid("A core limit is between 100 and 100,000 characters.", code="invalid_limit")
    with transaction.atomic():
        doc = _locked_document(scope, user=user, workspace=workspace)
        if len(doc.content) > limit:
            raise CoreFull(
                f"The document holds {len(doc.content):,} characters; lower the limit after trimming it.",
                extra={
                    "chars": len(doc.content),
                    "limit": limit,
                    "candidates": lru_candidates(doc),
                },
            )
        old_limit = doc.char_limit
        doc.char_limit = limit
        doc.save(update_fields=["char_limit", "updated_at"])
        if old_limit != limit:
            audit_record(
                actor=actor or Actor(origin="system", user=user),
                workspace=workspace,
                action="core.limit",
                target=f"core:{doc.scope}",
                detail={"limit": [old_limit, limit]},
            )
        return _view(doc)


def core_revisions(*, scope: str, workspace: Workspace, user: User | None) -> list[CoreRevision]:
    doc = CoreMemory.objects.filter(**_owner_filter(scope, user=user, workspace=workspace)).first()
    if doc is None:
        return []
    return list(doc.revisions.select_related("user", "session").order_by("-version"))


def core_revert(
    *,
    scope: str,
    workspace: Workspace,
    user: User | None,
    version: int,
    session: AgentSession | None = None,
    actor: Actor | None = None,
) -> CoreEdit:
    """Make the document what it was right after revision `version` (itself a new revision)."""
    with transaction.atomic():
        doc = _locked_document(scope, user=user, workspace=workspace)
        target = doc.revisions.filter(version=version).first()
        if target is None:
            raise NotFound(f"No revision {version}.", code="revision_not_found")
        new_lines = parse_lines(target.after)
        _check_limit(doc, join_lines(new_lines))
        revision = _save(
            doc,
            new_lines=new_lines,
            action="revert",
            user=user,
            session=session,
            actor=actor,
            workspace=workspace,
            detail={"to_version": version},
        )
        return CoreEdit(outcome="reverted", view=_view(doc), revision=revision)


# --- files: MEMORY.md / USER.md ------------------------------------------------------------


def core_export_text(view: CoreView) -> str:
    """The document as an HME file: one `fact §` per line, ending in a newline."""
    return view.content + "\n" if view.content else ""


def core_import_text(
    *,
    scope: str,
    workspace: Workspace,
    user: User | None,
    text: str,
    session: AgentSession | None = None,
    actor: Actor | None = None,
) -> CoreEdit:
    """Bring an HME file in. An empty document takes the file as it is (byte for
    byte); otherwise the file's missing lines are added. Over the limit: refused."""
    incoming = parse_lines(text.replace("\r\n", "\n"))
    for line in incoming:
        if find_secret(line):
            raise Invalid(
                f"The file has a line that looks like a credential: {line[:40]}…",
                code="secret_detected",
            )
    with transaction.atomic():
        doc = _locked_document(scope, user=user, workspace=workspace)
        lines = parse_lines(doc.content)
        if not lines:
            new_lines = incoming
        else:
            present = {fact_of(line) for line in lines}
            new_lines = lines + [line for line in incoming if fact_of(line) not in present]
        _check_limit(doc, join_lines(new_lines))
        revision = _save(
            doc,
            new_lines=new_lines,
            action="import",
            user=user,
            session=session,
            actor=actor,
            workspace=workspace,
            detail={"lines": len(incoming)},
        )
        return CoreEdit(outcome="imported", view=_view(doc), revision=revision)


# --- session snapshots ---------------------------------------------------------------------


def core_freeze(*, session: AgentSession) -> dict[str, Any]:
    """Freeze both documents for a session at its start (idempotent)."""
    if session.core_snapshot:
        return session.core_snapshot
    workspace = session.workspace
    user_view = (
        core_view(scope=CoreMemory.Scope.USER, user=session.user, workspace=workspace)
        if session.user
        else None
    )
    memory_view = core_view(scope=CoreMemory.Scope.WORKSPACE, user=None, workspace=workspace)
    snapshot = {
        "frozen_at": timezone.now().isoformat(),
        "user": {
            "content": user_view.content,
            "limit": user_view.limit,
            "version": user_view.version,
        }
        if user_view
        else None,
        "memory": {
            "content": memory_view.content,
            "limit": memory_view.limit,
            "version": memory_view.version,
        },
    }
    # Only the first freeze wins, even when two hooks race at session start.
    updated = AgentSession.objects.filter(pk=session.pk, core_snapshot__isnull=True).update(
        core_snapshot=snapshot
    )
    if not updated:
        session.refresh_from_db(fields=["core_snapshot"])
        return session.core_snapshot or snapshot
    session.core_snapshot = snapshot
    return snapshot


USER_BLOCK = "memflow:core-user"


def sees_user_document(*, viewer: User | None, session: AgentSession) -> bool:
    """Only the session's own user reads the USER document frozen into it."""
    return viewer is not None and session.user_id is not None and viewer.pk == session.user_id


def core_snapshot_views(*, session: AgentSession, viewer: User | None) -> dict[str, CoreView]:
    """What this session is shown: its frozen documents; nothing if it never started.

    USER is shown to the session's own user only; anyone else gets it `hidden`.
    """
    snapshot = session.core_snapshot or {}
    views: dict[str, CoreView] = {}
    private = not sees_user_document(viewer=viewer, session=session)
    for scope in ("user", "memory"):
        frozen = snapshot.get(scope)
        if not frozen:
            continue
        if scope == "user" and private:
            views[scope] = CoreView(
                scope=scope,
                content="",
                limit=frozen["limit"],
                version=frozen["version"],
                hidden=True,
            )
            continue
        views[scope] = CoreView(
            scope=scope,
            content=frozen["content"],
            limit=frozen["limit"],
            version=frozen["version"],
            lines=parse_lines(frozen["content"]),
        )
    return views


def snapshot_for(*, session: AgentSession, viewer: User | None) -> dict[str, Any]:
    """The frozen snapshot as `viewer` may see it (USER's text only for its own user)."""
    snapshot = dict(session.core_snapshot or {})
    if snapshot.get("user") and not sees_user_document(viewer=viewer, session=session):
        snapshot["user"] = {**snapshot["user"], "content": "", "hidden": True}
    return snapshot


def injected_block_text(
    *, name: str, text: str, viewer: User | None, session: AgentSession
) -> tuple[str, bool]:
    """A recorded block's text as `viewer` may read it, and whether it was withheld."""
    if name == USER_BLOCK and not sees_user_document(viewer=viewer, session=session):
        return "", True
    return text, False


# --- the archive tier ------------------------------------------------------------------------


def archive_ttl_days(workspace: Workspace, category: str) -> int | None:
    days = int(knob(workspace, ARCHIVE_TTL_KNOBS[category]))
    return days or None


def core_move_to_archive(
    *,
    scope: str,
    workspace: Workspace,
    user: User | None,
    old_text: str,
    category: str,
    session: AgentSession | None = None,
    actor: Actor | None = None,
) -> Memory:
    """Demote one line into the long-term library, its usage history kept."""
    from memories import services
    from memories.embeddings import get_embedder

    if category not in ARCHIVE_CATEGORIES:
        raise Invalid(
            f"Unknown category {category!r}: use {', '.join(ARCHIVE_CATEGORIES)}.",
            code="invalid_category",
        )
    # Find and embed the line before taking the lock; re-check it under the lock.
    current = parse_lines(core_view(scope=scope, user=user, workspace=workspace).content)
    line = current[_one_match(current, old_text)]
    fact = fact_of(line)
    vector = get_embedder().encode([fact])
    with transaction.atomic():
        doc = _locked_document(scope, user=user, workspace=workspace)
        lines = parse_lines(doc.content)
        if line not in lines:
            raise Conflict(
                "The line changed while it was being moved; try again.", code="line_changed"
            )
        index = lines.index(line)
        history = (doc.line_meta or {}).get(fact, {})
        ttl = archive_ttl_days(workspace, category)
        expires = timezone.now() + timedelta(days=ttl) if ttl else None
        [result] = services.memory_remember_bulk(
            workspace=workspace,
            items=[
                services.RememberInput(
                    text=fact,
                    compartment=category,
                    source="model",
                    metadata={
                        "from_core": LABELS[scope],
                        "core_history": history,
                        "core_line": line,
                    },
                )
            ],
            user=user,
            session=session,
            vectors=vector,
        )
        memory = result.memory
        Memory.objects.filter(pk=memory.pk).update(
            expires_at=expires, access_count=max(memory.access_count, int(history.get("uses", 0)))
        )
        memory.refresh_from_db()
        _save(
            doc,
            new_lines=[*lines[:index], *lines[index + 1 :]],
            action="move",
            user=user,
            session=session,
            actor=actor,
            workspace=workspace,
            detail={"old": line, "memory_id": memory.pk, "category": category},
        )
    return memory
