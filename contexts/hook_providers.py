"""What `contexts` itself adds to a hook answer: the directory's declared
identity sections and its preload, once per session.

The declaration is resolved on the agent's machine when its files live
there (`memflow hook` sends the assembly along as `context`), else from the
workspace's stored declarations and documents.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from contexts import services
from contexts.errors import MemflowError
from contexts.hooks import Block, HookContext, register_provider
from contexts.models import ContextDocument, Declaration

logger = logging.getLogger(__name__)

PRELOAD_ORDER = 60  # after the frozen core (50/51): the session's first user message


def declaration_blocks(ctx: HookContext) -> Iterable[Block]:
    if not ctx.constant:
        return []
    client_assembly = ctx.payload.get("context")
    raw_cwd = ctx.payload.get("cwd")
    cwd = raw_cwd if isinstance(raw_cwd, str) else ""
    try:
        if isinstance(client_assembly, dict):
            delivered = services.context_assembly_record(
                session=ctx.session,
                assembly=client_assembly,
                origin="client",
                request={"event": ctx.event},
            )
        elif cwd.startswith("/") and (
            Declaration.objects.filter(workspace=ctx.workspace).exists()
            or ContextDocument.objects.filter(workspace=ctx.workspace).exists()
        ):
            raw_env = ctx.payload.get("env")
            env: dict[str, object] = raw_env if isinstance(raw_env, dict) else {}
            delivered = services.context_assemble(
                workspace=ctx.workspace,
                session=ctx.session,
                directory=cwd,
                device=str(ctx.payload.get("device") or "") or None,
                hostname=str(ctx.payload.get("hostname") or "") or None,
                env={k: str(v) for k, v in env.items() if k.startswith("DSH_CONTEXT_")},
                delegation_depth=ctx.delegation_depth,
            )
        else:
            return []
    except MemflowError as exc:
        ctx.notes.append(f"context: {exc.detail}")
        return []
    blocks = [
        Block(name=f"context:{section.name}", order=section.order, text=section.text)
        for section in delivered.assembly.sections
        if section.text
    ]
    if delivered.preload is not None and delivered.preload.text:
        blocks.append(
            Block(name="context:preload", order=PRELOAD_ORDER, text=delivered.preload.text)
        )
    ctx.notes.extend(delivered.assembly.warnings)
    return blocks


def register() -> None:
    register_provider(
        "contexts:declaration", events=["session-start", "user-prompt"], fn=declaration_blocks
    )
