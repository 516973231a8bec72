"""What `contexts` itself adds to a hook answer: the directory's declared
identity sections and its preload, and what is wrong with its declaration.

The declaration is resolved on the agent's machine when its files live
there (`memflow hook` sends the assembly along as `context`), else from the
workspace's stored declarations and documents.

Identity is re-read during a session: the hook client sends the assembly
again before a prompt when one of its files changed (memflow_site.client.session).
A section the session was given under its name, with other text, comes again
as an update; one it was given byte for byte is left out (pipeline.only_new).
The preload is given once, at the session's start.

A declaration that cannot be used (a file that does not parse: the
assembly's warnings, line-numbered) is logged as a `context.error` event and
said to the person once per session and distinct error (`HookContext.messages`,
Claude Code's `systemMessage`), not to the model.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

from contexts.declarations import Section
from contexts.errors import MemflowError
from contexts.hooks import Block, HookContext, inert, register_provider
from contexts.models import ContextDocument, Declaration, SessionEvent
from contexts.tenancy import services

logger = logging.getLogger(__name__)

PRELOAD_ORDER = 60  # after the frozen core (50/51): the session's first user message
CONTEXT_ERROR_EVENT = "context.error"


def declaration_blocks(ctx: HookContext) -> Iterable[Block]:
    client_assembly = ctx.payload.get("context")
    if not ctx.constant and not isinstance(client_assembly, dict):
        return []  # between starts, only a client's re-read (it sends one when a file changed)
    try:
        client = None
        if isinstance(client_assembly, dict):
            # Between starts the preload is not given again, whatever a client sends.
            sent = client_assembly if ctx.constant else {**client_assembly, "preload": None}
            client = services.context_assembly_from_json(sent)
            declaration_errors_report(ctx, client.warnings)
        if client is not None and (client.sections or client.preload is not None):
            delivered = services.context_assembly_record(
                session=ctx.session, assembly=client, origin="client", request={"event": ctx.event}
            )
        elif ctx.constant and _stored_declarations(ctx):
            delivered = _stored_assembly(ctx)
            declaration_errors_report(ctx, delivered.assembly.warnings)
        else:
            return []
    except MemflowError as exc:
        ctx.notes.append(f"context: {exc.detail}")
        return []
    blocks = [
        section_block(section, ctx) for section in delivered.assembly.sections if section.text
    ]
    if delivered.preload is not None and delivered.preload.text:
        blocks.append(
            Block(name="context:preload", order=PRELOAD_ORDER, text=delivered.preload.text)
        )
    ctx.notes.extend(delivered.assembly.warnings)
    return blocks


def _stored_declarations(ctx: HookContext) -> bool:
    cwd = ctx.payload.get("cwd")
    return (
        isinstance(cwd, str)
        and cwd.startswith("/")
        and (
            Declaration.objects.filter(workspace=ctx.workspace).exists()
            or ContextDocument.objects.filter(workspace=ctx.workspace).exists()
        )
    )


def _stored_assembly(ctx: HookContext) -> services.DeliveredContext:
    raw_env = ctx.payload.get("env")
    env: dict[str, object] = raw_env if isinstance(raw_env, dict) else {}
    return services.context_assemble(
        workspace=ctx.workspace,
        session=ctx.session,
        directory=str(ctx.payload.get("cwd")),
        device=str(ctx.payload.get("device") or "") or None,
        hostname=str(ctx.payload.get("hostname") or "") or None,
        env={k: str(v) for k, v in env.items() if k.startswith("DSH_CONTEXT_")},
        delegation_depth=ctx.delegation_depth,
    )


def section_block(section: Section, ctx: HookContext) -> Block:
    """The section as a block: as it is, or, when the session was given other text under
    its name (the file changed since), framed as the version that replaces that one."""
    name = f"context:{section.name}"
    plain = Block(name=name, order=section.order, text=section.text)
    if name not in ctx.seen.blocks or ctx.seen.given(plain):
        return plain  # new to the session, or given as it is (only_new leaves it out)
    where = section.display or section.source or section.name
    return Block(
        name=name,
        order=section.order,
        text=(
            f'<memflow-context-update source="{_attribute(where)}">\n'
            f"{where} changed during this session. Its current text follows; it replaces "
            "the version you were given earlier.\n\n"
            f"{inert(section.text)}\n</memflow-context-update>"
        ),
    )


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def declaration_errors_report(ctx: HookContext, warnings: Iterable[str]) -> None:
    """Log each warning of an assembly and say it to the person, once per session."""
    for warning in dict.fromkeys(w for w in warnings if w):
        sha = hashlib.sha256(warning.encode()).hexdigest()
        if SessionEvent.objects.filter(
            session=ctx.session, kind=CONTEXT_ERROR_EVENT, payload__sha256=sha
        ).exists():
            continue
        SessionEvent.objects.create(
            session=ctx.session,
            kind=CONTEXT_ERROR_EVENT,
            payload={"error": warning, "sha256": sha, "event": ctx.event},
            turn=max(ctx.session.turns, 1),
        )
        ctx.messages.append(
            f"memflow: {warning}. `memflow context` shows what this directory declares."
        )


def register() -> None:
    register_provider(
        "contexts:declaration", events=["session-start", "user-prompt"], fn=declaration_blocks
    )
